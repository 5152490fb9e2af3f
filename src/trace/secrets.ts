/**
 * Which values the runner masks in a job's trace (docs/protocol-v1.md §7.1, docs/protocol-v4.md §8.4): the build token, the runner token, the
 * values of masked variables (v4's `masked`; over v1, those that are not public), dependency build tokens, registry passwords, passwords in URLs,
 * and any extra values the caller names. A multi-line value (a PEM key, a JSON credentials file) is
 * masked whole and also line by line, so a job that prints one line of it does not leak that line.
 */
import type { BuildPayload } from '../protocol/types.js';

/** Shorter values are not masked: masking every `a` or `42` would make a log unreadable. */
export const MIN_SECRET_LENGTH = 3;

/** Most URL passwords collected from one job's variables; a sane job has a handful (see collectSecrets). */
export const MAX_URL_PASSWORDS = 100;

/**
 * Passwords in `scheme://user:password@host` URLs found anywhere in `text` (a scheme is a letter then
 * letters, digits, `+`, `.` or `-`; neither user nor password holds a blank, `/` or `@`, the user no
 * `:`), at most `limit` of them. A scan, not a regular expression: the text is a job's variable and
 * can be made so that a backtracking search takes minutes; each character here is looked at a bounded
 * number of times.
 */
export function urlPasswords(text: string, limit = Number.POSITIVE_INFINITY): string[] {
  const found: string[] = [];
  let from = 0;
  for (let sep = text.indexOf('://'); sep >= 0 && found.length < limit; sep = text.indexOf('://', sep + 1)) {
    // The scheme: the run of scheme characters before `://` (after the last URL found), holding a letter.
    let start = sep;
    let letter = false;
    while (start > from && isSchemeChar(text.charCodeAt(start - 1))) {
      start -= 1;
      letter ||= isLetter(text.charCodeAt(start));
    }
    if (!letter) continue;
    let colon = sep + 3;
    while (colon < text.length && !endsUser(text.charCodeAt(colon))) colon += 1;
    if (text.charCodeAt(colon) !== COLON) continue;
    let at = colon + 1;
    while (at < text.length && !endsPassword(text.charCodeAt(at))) at += 1;
    if (at === colon + 1 || text.charCodeAt(at) !== AT) continue;
    const password = text.slice(colon + 1, at);
    found.push(password);
    try {
      const decoded = decodeURIComponent(password);
      if (decoded !== password) found.push(decoded);
    } catch {
      // not percent-encoded: the raw form is all there is
    }
    from = at + 1;
    sep = at;
  }
  return found;
}

const COLON = 0x3a;
const AT = 0x40;
const SLASH = 0x2f;

function isLetter(c: number): boolean {
  return (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a);
}

function isSchemeChar(c: number): boolean {
  return isLetter(c) || (c >= 0x30 && c <= 0x39) || c === 0x2b || c === 0x2e || c === 0x2d;
}

/** JavaScript's `\s`, one character at a time. */
function isBlank(c: number): boolean {
  return c === 0x20 || (c >= 0x09 && c <= 0x0d) || c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) || c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff;
}

function endsPassword(c: number): boolean {
  return c === SLASH || c === AT || isBlank(c);
}

function endsUser(c: number): boolean {
  return c === COLON || endsPassword(c);
}

/**
 * `values`, and for a multi-line one each of its lines too, without its line ending (LF, CRLF or CR)
 * and surrounding blanks. Lines shorter than {@link MIN_SECRET_LENGTH} are left out (a `}` or an
 * empty line is no secret); the whole value is still masked wherever it is printed whole. Line breaks
 * that open or close a value are not part of what is masked, so `cat` of a key file keeps its last
 * newline.
 */
export function withSecretLines(values: readonly string[], maxLines = Number.POSITIVE_INFINITY, onCut?: () => void): string[] {
  const all: string[] = [];
  let lines = 0;
  for (const value of values) {
    if (!/[\r\n]/.test(value)) {
      all.push(value);
      continue;
    }
    const whole = trimLineBreaks(value);
    if (whole.length >= MIN_SECRET_LENGTH) all.push(whole);
    for (const line of whole.split(/\r\n|\r|\n/)) {
      const text = line.trim();
      if (text.length < MIN_SECRET_LENGTH) continue;
      lines += 1;
      if (lines <= maxLines) all.push(text);
      else if (lines === maxLines + 1) onCut?.();
    }
  }
  return all;
}

/** Most lines of multi-line secrets masked one by one (each is searched for in every write of the log). */
export const MAX_SECRET_LINES = 1000;

/** `value` without the CR and LF characters that open and close it (a loop: see urlPasswords). */
function trimLineBreaks(value: string): string {
  let start = 0;
  let end = value.length;
  while (start < end && isLineBreak(value.charCodeAt(start))) start += 1;
  while (end > start && isLineBreak(value.charCodeAt(end - 1))) end -= 1;
  return value.slice(start, end);
}

function isLineBreak(c: number): boolean {
  return c === 0x0a || c === 0x0d;
}

/**
 * Collects the secrets to mask for one build; short and duplicate values are dropped. Passwords of
 * URLs in the job's variables are collected up to MAX_URL_PASSWORDS (a variable is the job's own
 * text: thousands of made-up URLs would only slow every write of its log); past that a line goes to
 * `notes`. Masked variables, tokens and registry passwords are never left out.
 */
export function collectSecrets(build: BuildPayload, runnerToken: string, extra: readonly string[] = [], notes: string[] = []): string[] {
  const values = [build.token, runnerToken, ...extra];
  const fromUrls: string[] = [];
  const urls = (text: string): void => {
    if (fromUrls.length < MAX_URL_PASSWORDS) fromUrls.push(...urlPasswords(text, MAX_URL_PASSWORDS + 1 - fromUrls.length));
  };
  urls(build.repo_url);
  for (const variable of build.variables) {
    // v4 names the variables to mask; v1 has no such flag, and every variable that is not public is.
    if (variable.masked ?? !variable.public) values.push(variable.value);
    urls(variable.value);
  }
  for (const dependency of build.depends_on_builds) values.push(dependency.token);
  for (const credential of build.credentials) values.push(credential.password);
  for (const credential of build.credentials) urls(credential.url);
  if (fromUrls.length > MAX_URL_PASSWORDS) notes.push(`WARNING: the job's variables hold more than ${MAX_URL_PASSWORDS} passwords in URLs; the first ${MAX_URL_PASSWORDS} are masked in this log, not the rest`);
  values.push(...fromUrls.slice(0, MAX_URL_PASSWORDS));
  const long = values.filter((value) => typeof value === 'string' && value.length >= MIN_SECRET_LENGTH);
  const all = withSecretLines(long, MAX_SECRET_LINES, () => notes.push(`WARNING: the job's multi-line secrets have more than ${MAX_SECRET_LINES} lines; each is masked whole, and the first ${MAX_SECRET_LINES} of their lines also one by one`));
  return [...new Set(all)];
}
