/**
 * What a coordinator says about where a job's sources come from — the repository URL, the commit, the
 * ref and (v4) the refspecs — is data for git, and a hostile coordinator chooses it. A value that git
 * could read as an option (`--upload-pack=<command>` runs that command), a local path or `file://`
 * URL (git then reads any repository on the runner's machine, and runs `--upload-pack` for it), or a
 * transport that runs programs (`ext::`) must never reach git. So a payload is refused unless:
 *
 * - the repository URL is an `http` or `https` URL (the only transports the runner authenticates:
 *   credentials travel as an HTTP header, git-sources.ts), with a host, and no control character;
 * - the commit is 8–64 hexadecimal digits (a SHA-1 or SHA-256 name, or a prefix of one);
 * - the ref, when the runner builds a refspec from it (`refs/heads/<ref>`, `refs/tags/<ref>`), makes a
 *   valid ref name, and never starts with `-`;
 * - each refspec is `[+]<src>:<dst>`, both full ref names under `refs/` valid by git's
 *   check-ref-format rules, with one `*` on each side or none.
 *
 * get_sources also passes these after `--` wherever git takes them (git-sources.ts), so a value that
 * slipped past this check could still not be an option.
 */

/** A reason the value cannot be used, or undefined when it can. Never repeats the value (it may hold a token). */
export type Problem = string | undefined;

const CONTROL = /[\u0000-\u001f\u007f]/;

/** `repo_url`: an http(s) URL with a host. */
export function repoUrlProblem(url: string): Problem {
  const why = 'must be an http:// or https:// URL of a remote repository (a local path, file://, ssh, ext:: or anything git could read as an option is refused)';
  if (CONTROL.test(url) || url.startsWith('-') || !URL.canParse(url)) return why;
  const parsed = new URL(url);
  if ((parsed.protocol !== 'http:' && parsed.protocol !== 'https:') || parsed.hostname === '') return why;
  return undefined;
}

/** `sha`: hexadecimal object name. */
export function shaProblem(sha: string): Problem {
  return /^[0-9a-fA-F]{8,64}$/.test(sha) ? undefined : 'must be a commit SHA (8 to 64 hexadecimal digits)';
}

/** `ref` (a branch or tag name): one that makes a valid `refs/heads/<ref>`. Empty is left to git. */
export function refProblem(ref: string): Problem {
  if (ref === '') return undefined;
  if (ref.startsWith('-') || !isValidRefName(`refs/heads/${ref}`)) return 'must be a valid branch or tag name (git check-ref-format)';
  return undefined;
}

/** One of v4's `git_info.refspecs`. */
export function refspecProblem(refspec: string): Problem {
  const why = 'must be a refspec [+]refs/<src>:refs/<dst> of valid ref names (git check-ref-format)';
  const spec = refspec.startsWith('+') ? refspec.slice(1) : refspec;
  const colon = spec.indexOf(':');
  if (colon < 0) return why;
  const src = spec.slice(0, colon);
  const dst = spec.slice(colon + 1);
  const pattern = src.includes('*');
  if (pattern !== dst.includes('*')) return why;
  if (!src.startsWith('refs/') || !dst.startsWith('refs/')) return why;
  if (!isValidRefName(src, pattern) || !isValidRefName(dst, pattern)) return why;
  return undefined;
}

/**
 * git's check-ref-format rules for a full ref name: no control character, space, `~ ^ : ? [ \`, no
 * `..` or `@{`, not `@`; not starting or ending with `/`, no `//`; not ending with `.`; no component
 * starting with `.` or ending with `.lock`. With `pattern`, one `*` is allowed (`--refspec-pattern`).
 */
export function isValidRefName(name: string, pattern = false): boolean {
  if (name === '' || name === '@' || CONTROL.test(name) || /[ ~^:?[\\]/.test(name)) return false;
  if (name.includes('..') || name.includes('@{') || name.endsWith('.')) return false;
  const stars = name.split('*').length - 1;
  if (stars > (pattern ? 1 : 0)) return false;
  const parts = name.split('/');
  return parts.every((part) => part !== '' && !part.startsWith('.') && !part.endsWith('.lock'));
}

/** What a payload says about its sources, by the path of each field in that payload. */
export interface GitSourceFields {
  repoUrl: { path: PropertyKey[]; value: string };
  sha: { path: PropertyKey[]; value: string };
  ref: { path: PropertyKey[]; value: string };
  refspecs?: { path: PropertyKey[]; value: readonly string[] };
}

/** Every problem of `fields`, each at its field's path: for a schema's `superRefine`. */
export function gitSourceIssues(fields: GitSourceFields): Array<{ path: PropertyKey[]; message: string }> {
  const issues: Array<{ path: PropertyKey[]; message: string }> = [];
  const check = (path: PropertyKey[], problem: Problem): void => {
    if (problem !== undefined) issues.push({ path, message: problem });
  };
  check(fields.repoUrl.path, repoUrlProblem(fields.repoUrl.value));
  check(fields.sha.path, shaProblem(fields.sha.value));
  check(fields.ref.path, refProblem(fields.ref.value));
  fields.refspecs?.value.forEach((spec, index) => check([...fields.refspecs!.path, index], refspecProblem(spec)));
  return issues;
}
