/**
 * A runner token as GitLab Runner shows it (helpers/shorten_token.go): known prefixes stripped
 * (`glrt-` with an optional `t1_`…`t3_` partition, a bare partition, `glrtr-`, `glcbt-`, and the
 * old `GR` + 7 hex registration prefix), then the first 9 characters. It is the `runner` label of
 * the metrics and safe to log: 9 characters of a token's random part do not grant anything.
 */
const PREFIXES: readonly RegExp[] = [/^glrt-(t[123]_)?|^t[123]_|^glrtr-/, /^glcbt-/, /^GR[0-9A-Fa-f]{7}/];

export function shortenToken(token: string): string {
  let rest = token;
  for (const prefix of PREFIXES) rest = rest.replace(prefix, '');
  return rest.slice(0, 9);
}
