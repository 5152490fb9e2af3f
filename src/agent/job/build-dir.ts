/**
 * Where a job's files live (docs/protocol-v1.md §10.8): the project dir
 * `<builds_dir>/<short token>/<slot>/<namespace>/<project>` — GitLab Runner 19's layout for a shared
 * builds dir (shell), the slot being CI_CONCURRENT_PROJECT_ID — and, beside it, `<project dir>.tmp/`
 * for the trace spool, generated scripts and file variables: outside the checkout, so `git clean`
 * never touches them and artifacts never include them.
 *
 * Where the build stages see the slot dir as `/builds` (docker, kubernetes), each project has a slot
 * dir of its own, `<builds_dir>/<short token>/project-<id>-concurrent-<slot>` (GitLab Runner's volume
 * is per project and slot too): a job choosing its project dir with GIT_CLONE_PATH can then reach
 * nothing of another project's. Versions before GitLab Runner 19's short token used the token's first
 * 8 characters (`legacyTokenDir`); crash recovery still looks there.
 */
import { join } from 'node:path';
import { shortToken } from '../../util/short-token.js';
import { trimEndChar, trimStartChar } from '../../util/text.js';

/** A segment of a GitLab group or project path: letters, digits, `_`, `-` and `.`. */
const PATH_SEGMENT = /^[A-Za-z0-9_.-]+$/;

/**
 * The path of `repo_url` without the leading `/` and `.git`; `project-<id>` when unusable: a segment
 * GitLab would not make (`..`, a `:` that would split docker's `--volume`, a blank), or a last one
 * ending in `.tmp` — the state dirs of the project of that name without it, whose jobs share the slot
 * numbers (slots.ts counts per project) and may run beside this one.
 */
export function projectSlug(repoUrl: string, projectId: number): string {
  const fallback = `project-${projectId}`;
  let path: string;
  try {
    const url = new URL(repoUrl);
    if (!url.host) return fallback;
    path = decodeURIComponent(url.pathname);
  } catch {
    return fallback;
  }
  const slug = trimEndChar(trimStartChar(path, '/'), '/').replace(/\.git$/, '');
  const parts = slug.split('/');
  if (parts.some((part) => part === '..' || part === '.' || !PATH_SEGMENT.test(part)) || slug.endsWith('.tmp')) return fallback;
  return slug;
}

export interface JobDirs {
  /** `<builds_dir>/<short token>/<slot>` — the per-slot root (CI_BUILDS_DIR for docker and kubernetes). */
  slotDir: string;
  /** Where sources are checked out; `CI_PROJECT_DIR`. */
  projectDir: string;
  /** `<project dir>.tmp`, shared by the slot's jobs over time. */
  tmpDir: string;
  /** This job's private state dir under tmpDir (trace spool, scripts, file variables); kept after the
   *  job only while its final trace update is still owed. */
  stateDir: string;
}

/** The runner's own dir under builds_dir, before GitLab Runner 19's short token: the token's first 8 characters. */
export const legacyTokenDir = (runnerToken: string): string => runnerToken.slice(0, 8);

/**
 * Computes the dirs of one job; `shared`: the builds dir is the host's, shared by every project
 * (shell), else each project has its own slot dirs (see the module comment).
 */
export function jobDirs(buildsDir: string, runnerToken: string, slot: number, build: { id: number; repo_url: string; project_id: number }, shared = true): JobDirs {
  const slotDir = join(buildsDir, shortToken(runnerToken), shared ? String(slot) : `project-${build.project_id}-concurrent-${slot}`);
  const projectDir = join(slotDir, projectSlug(build.repo_url, build.project_id));
  const tmpDir = `${projectDir}.tmp`;
  return { slotDir, projectDir, tmpDir, stateDir: join(tmpDir, `build-${build.id}`) };
}

/** Prints a URL with any user:password removed, for traces and logs. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (!parsed.username && !parsed.password) return url;
    parsed.username = '';
    parsed.password = '';
    return parsed.toString();
  } catch {
    return url.replace(/\/\/[^/@\s]*@/, '//');
  }
}
