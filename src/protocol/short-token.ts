/**
 * A runner token's short form, as GitLab Runner 19 derives it (`helpers/shorten_token.go`): the known
 * prefixes stripped — `glrt-` with an optional partition `t1_`…`t3_`, a bare partition prefix, `glrtr-`,
 * a job token's `glcbt-`, an old registration token's `GR` and 7 hex digits — then the first 9
 * characters. It names the runner in the build dirs (`<builds_dir>/<short token>/…`) and is the job's
 * CI_RUNNER_SHORT_TOKEN; it is never enough to authenticate.
 */
const PREFIXES = [/^glrt-(t[123]_)?|^t[123]_|^glrtr-/, /^glcbt-/, /^GR[0-9A-Fa-f]{7}/];

export function shortToken(token: string): string {
  let rest = token;
  for (const prefix of PREFIXES) rest = rest.replace(prefix, '');
  return rest.slice(0, 9);
}
