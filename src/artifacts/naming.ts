/**
 * Names derived from the build payload: the artifacts file name (`<basename of artifacts:name>.ext`,
 * §4.7, with `$VARS` expanded as the legacy job shell did), the project's path (the cache's local copies
 * are kept under it) and byte counts for trace lines.
 */
import type { ArtifactsOptions, BuildPayload, BuildVariable, DependencyBuild } from '../protocol/types.js';
import { trimStartChar } from '../util/text.js';

/** Expands `$NAME` and `${NAME}` from `variables` (later entries win); unknown names become empty. */
export function expandVariables(text: string, variables: BuildVariable[]): string {
  const values = new Map(variables.map((variable) => [variable.key, variable.value]));
  return text.replace(/\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))/g, (_, braced?: string, bare?: string) => values.get(braced ?? bare ?? '') ?? '');
}

/** The job's artifacts entries: v1's one archive, or v4's list (the archive and one entry per report). */
export function artifactsOf(build: Pick<BuildPayload, 'options'>): ArtifactsOptions[] {
  const artifacts = build.options.artifacts;
  return artifacts === undefined ? [] : Array.isArray(artifacts) ? artifacts : [artifacts];
}

/** The dependencies whose artifacts this build downloads. */
export function dependenciesToDownload(deps: DependencyBuild[], filter: string[] | undefined): DependencyBuild[] {
  return deps.filter((dep) => Boolean(dep.artifacts_file?.filename) && (filter === undefined || filter.includes(dep.name)));
}

/** §9.3: on_success (default) uploads after success, on_failure after failure, always after both. */
export function shouldUpload(when: string | undefined, jobSucceeded: boolean): boolean {
  if (when === 'always') return true;
  if (when === 'on_failure') return !jobSucceeded;
  return jobSucceeded;
}

/** File name extension per archive format (`raw` keeps the file's own name). */
const EXTENSIONS = { 'tar.gz': 'tar.gz', zip: 'zip', gzip: 'gz' } as const;

/**
 * `<basename of the expanded artifacts name, or "artifacts">.<format>` for `spec` (default: the
 * job's first entry); a `raw` entry is sent under its file's own name, given as `rawFile`.
 */
export function artifactsFileName(build: Pick<BuildPayload, 'variables' | 'options'>, format: 'tar.gz' | 'zip' | 'gzip' | 'raw', spec = artifactsOf(build)[0], rawFile?: string): string {
  const basename = (text: string): string => text.split('/').filter((part) => part !== '' && part !== '.' && part !== '..').pop() ?? '';
  if (format === 'raw' && rawFile !== undefined && basename(rawFile) !== '') return basename(rawFile);
  const base = basename(expandVariables(spec?.name ?? '', build.variables));
  return `${base === '' ? 'artifacts' : base}.${format === 'raw' ? 'bin' : EXTENSIONS[format]}`;
}

/**
 * A path segment that is safe as a file name and distinct per input: characters outside
 * `[A-Za-z0-9._-]` are percent-encoded (so `a/b` and `a_b` stay different keys).
 */
export function safeSegment(text: string): string {
  return Array.from(Buffer.from(text, 'utf8'))
    .map((byte) => (/[A-Za-z0-9._-]/.test(String.fromCharCode(byte)) ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`))
    .join('');
}

/** The project part of build paths (§10.8): `repo_url`'s path without `/` and `.git`, else `project-<id>`. */
export function projectSlug(build: BuildPayload): string {
  let path = '';
  try {
    path = new URL(build.repo_url).pathname;
  } catch {
    path = '';
  }
  const parts = trimStartChar(path, '/').replace(/\.git$/, '').split('/').filter((part) => part !== '');
  if (parts.length === 0 || parts.some((part) => part === '.' || part === '..')) return `project-${build.project_id}`;
  return parts.map(safeSegment).join('/');
}

/** `12.3 MB`, in MiB like the server's `max_artifacts_size` setting. */
export function megabytes(bytes: number): string {
  return `${(bytes / 1_048_576).toFixed(bytes < 10_485_760 ? 2 : 1)} MB`;
}
