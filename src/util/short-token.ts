/**
 * A runner's short token, as GitLab Runner 19 derives it (`helpers.ShortenToken`): the token without
 * its known prefixes (`glrt-` with an optional partition `t1_`..`t3_`, a bare partition prefix,
 * `glrtr-`, `glcbt-`, and an old `GR1348941`-style registration prefix), then its first 9 characters.
 * GitLab Runner names the runner's cache objects (`runner/<short token>/…`), its directories and
 * `CI_RUNNER_SHORT_TOKEN` after it, so every one of ours derives it here. (Before 19.0 it was 8
 * characters and only `glrt-` was stripped: caches written by those versions sit under another name.)
 */
const PREFIXES = [/^glrt-(t[123]_)?|^t[123]_|^glrtr-/, /^glcbt-/, /^GR[0-9A-Fa-f]{7}/];

export const SHORT_TOKEN_LENGTH = 9;

export function shortToken(token: string): string {
  let rest = token;
  for (const prefix of PREFIXES) rest = rest.replace(prefix, '');
  return rest.slice(0, SHORT_TOKEN_LENGTH);
}
