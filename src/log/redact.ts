/**
 * What pino's `redact` hides in log records: credentials by key (a runner or job token, a password, an
 * authorization header) and the secret parts of URLs (`user:password@` and `token=` query parameters),
 * at the top level and one level down (a record's `headers`, `runner`, …). A URL keeps the rest, so a
 * log line still says where a request went.
 */
import type { redactOptions } from 'pino';

export const MASK = '[MASKED]';

/** Keys whose whole value is a secret. */
const SECRET_KEYS = [
  'token', 'password', 'registrationToken', 'runnerToken', 'jobToken', 'private_token', 'authorization', 'proxy-authorization', 'private-token', 'job-token',
  // [runners.cache]'s credentials (S3, Azure, GCS), should a record ever hold a cache table.
  'SecretKey', 'SessionToken', 'AccountKey', 'PrivateKey',
];

/** Keys whose value is a URL that may carry credentials. */
const URL_KEYS = ['url', 'repo_url', 'proxy', 'remote', 'listenUrl'];

const URL_KEY_SET = new Set(URL_KEYS);

/** `token=…`, `private_token=…`, `job_token=…` query parameters. */
const TOKEN_PARAM = /([?&](?:[a-z_]*_)?token=)[^&#\s]*/gi;
/** `scheme://user:password@` and `scheme://token@`. */
const USER_INFO = /(\/\/)[^/?#@\s]*@/g;

/** `value` with the credentials of any URL in it masked; anything but a string unchanged. */
export function redactUrlText(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  return value.replace(USER_INFO, '$1').replace(TOKEN_PARAM, `$1${MASK}`);
}

/** `key` and `*.key` in pino's path syntax (`["a-b"]` for a key that is not an identifier). */
function paths(keys: readonly string[]): string[] {
  return keys.flatMap((key) => (/^[A-Za-z_$][\w$]*$/.test(key) ? [key, `*.${key}`] : [`["${key}"]`, `*["${key}"]`]));
}

/** pino's `redact` option for every logger of this process. */
export const REDACT: redactOptions = {
  paths: [...paths(SECRET_KEYS), ...paths(URL_KEYS)],
  censor: (value: unknown, path: string[]) => (URL_KEY_SET.has(path.at(-1) ?? '') ? redactUrlText(value) : MASK),
};
