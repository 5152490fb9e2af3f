/**
 * Which values the runner masks in a job's trace (docs/protocol-v1.md §7.1, docs/protocol-v4.md §8.4): the build token, the runner token, the
 * values of masked variables (v4's `masked`; over v1, those that are not public), dependency build tokens, registry passwords, passwords in URLs,
 * and any extra values the caller names. A multi-line value (a PEM key, a JSON credentials file) is
 * masked whole and also line by line, so a job that prints one line of it does not leak that line.
 */
import type { BuildPayload } from '../protocol/types.js';

/** Shorter values are not masked: masking every `a` or `42` would make a log unreadable. */
export const MIN_SECRET_LENGTH = 3;

/** Passwords in `scheme://user:password@host` URLs found anywhere in `text`. */
export function urlPasswords(text: string): string[] {
  const found: string[] = [];
  for (const match of text.matchAll(/[a-z][a-z0-9+.-]*:\/\/[^\s:/@]*:([^\s/@]+)@/gi)) {
    const password = match[1];
    if (password === undefined) continue;
    found.push(password);
    try {
      const decoded = decodeURIComponent(password);
      if (decoded !== password) found.push(decoded);
    } catch {
      // not percent-encoded: the raw form is all there is
    }
  }
  return found;
}

/**
 * `values`, and for a multi-line one each of its lines too, without its line ending (LF, CRLF or CR)
 * and surrounding blanks. Lines shorter than {@link MIN_SECRET_LENGTH} are left out (a `}` or an
 * empty line is no secret); the whole value is still masked wherever it is printed whole. Line breaks
 * that open or close a value are not part of what is masked, so `cat` of a key file keeps its last
 * newline.
 */
export function withSecretLines(values: readonly string[]): string[] {
  const all: string[] = [];
  for (const value of values) {
    if (!/[\r\n]/.test(value)) {
      all.push(value);
      continue;
    }
    const whole = value.replace(/^[\r\n]+|[\r\n]+$/g, '');
    if (whole.length >= MIN_SECRET_LENGTH) all.push(whole);
    for (const line of whole.split(/\r\n|\r|\n/)) {
      const text = line.trim();
      if (text.length >= MIN_SECRET_LENGTH) all.push(text);
    }
  }
  return all;
}

/** Collects the secrets to mask for one build; short and duplicate values are dropped. */
export function collectSecrets(build: BuildPayload, runnerToken: string, extra: readonly string[] = []): string[] {
  const values = [build.token, runnerToken, ...extra, ...urlPasswords(build.repo_url)];
  for (const variable of build.variables) {
    // v4 names the variables to mask; v1 has no such flag, and every variable that is not public is.
    if (variable.masked ?? !variable.public) values.push(variable.value);
    values.push(...urlPasswords(variable.value));
  }
  for (const dependency of build.depends_on_builds) values.push(dependency.token);
  for (const credential of build.credentials) values.push(credential.password, ...urlPasswords(credential.url));
  const long = values.filter((value) => typeof value === 'string' && value.length >= MIN_SECRET_LENGTH);
  return [...new Set(withSecretLines(long))];
}
