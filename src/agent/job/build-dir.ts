/**
 * Where a job's files live (docs/protocol-v1.md §10.8): the project dir
 * `<builds_dir>/<token8>/<slot>/<namespace>/<project>` and, beside it, `<project dir>.tmp/` for the
 * trace spool, generated scripts and file variables — outside the checkout, so `git clean` never
 * touches them and artifacts never include them.
 */
import { join } from 'node:path';
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
  /** `<builds_dir>/<token8>/<slot>` — the per-slot root. */
  slotDir: string;
  /** Where sources are checked out; `CI_PROJECT_DIR`. */
  projectDir: string;
  /** `<project dir>.tmp`, shared by the slot's jobs over time. */
  tmpDir: string;
  /** This job's private state dir under tmpDir (trace spool, scripts, file variables); kept after the
   *  job only while its final trace update is still owed. */
  stateDir: string;
}

/** Computes the dirs of one job. */
export function jobDirs(buildsDir: string, runnerToken: string, slot: number, build: { id: number; repo_url: string; project_id: number }): JobDirs {
  const slotDir = join(buildsDir, runnerToken.slice(0, 8), String(slot));
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
