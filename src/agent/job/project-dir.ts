/**
 * Where the job's checkout goes, when not the slot's own project dir (build-dir.ts): GIT_CLONE_PATH,
 * as GitLab Runner 19 allows it (`common/build.go`'s getCustomBuildDir) — only with
 * `[runners.custom_build_dir] enabled` (default: on for docker and kubernetes, off for shell), only
 * within the builds dir the build stages see (CI_BUILDS_DIR), with its messages — and GIT_STRATEGY
 * `empty`, whose project dir is `<project>-empty` so the slot's kept checkout survives it.
 *
 * On the runner's side the chosen dir must leave the runner's own dirs alone: the job's state dir
 * (`<project>.tmp`, which holds the trace), and with the shell executor the runner's `<short token>`
 * tree, where other jobs' slots are. With docker and kubernetes the dir lands in the project's own
 * slot dir, so no other project's checkout is within reach. A `<dir>.tmp` made beside it, as GitLab
 * Runner makes one, tells crash recovery (recover.ts) that the dir is a checkout, not the runner's.
 */
import { mkdir } from 'node:fs/promises';
import { isAbsolute, join, posix, sep } from 'node:path';
import { shortToken } from '../../util/short-token.js';
import { legacyTokenDir, type JobDirs } from './build-dir.js';
import { JobSetupError } from './control-variables.js';
import { variableValue, type JobVariable } from './variables.js';

export interface PlaceOptions {
  dirs: JobDirs;
  /** The job's variables, expanded, with CI_BUILDS_DIR as the build stages see it. */
  variables: readonly JobVariable[];
  /** The build stages' builds dir (`/builds` for docker and kubernetes), undefined: the host's `builds_dir`. */
  buildsDir: string | undefined;
  runner: { builds_dir: string; token: string; custom_build_dir: { enabled?: boolean | undefined } };
  /** The executor's GitLab Runner default for `custom_build_dir` (docker, kubernetes: on). */
  customByDefault: boolean;
}

const refuse = (message: string): never => {
  throw new JobSetupError(message, 'CLONE_PATH', 'runner_configuration_error');
};

const inside = (parent: string, path: string): boolean => path === parent || path.startsWith(`${parent}${sep}`);

/** The job's dirs with the project dir GIT_CLONE_PATH or GIT_STRATEGY `empty` asks for; throws JobSetupError. */
export async function placeProjectDir(options: PlaceOptions): Promise<JobDirs> {
  const { dirs, runner } = options;
  const clonePath = variableValue(options.variables, 'GIT_CLONE_PATH') ?? '';
  if (clonePath === '') {
    if (variableValue(options.variables, 'GIT_STRATEGY') !== 'empty') return dirs;
    return { ...dirs, projectDir: `${dirs.projectDir}-empty` };
  }
  if (!(runner.custom_build_dir.enabled ?? options.customByDefault)) refuse('setting GIT_CLONE_PATH is not allowed, enable `custom_build_dir` feature');
  const root = options.buildsDir ?? runner.builds_dir;
  const within = `the GIT_CLONE_PATH=${JSON.stringify(clonePath)} has to be within ${JSON.stringify(root)}`;
  if (!isAbsolute(clonePath) || /[\u0000-\u001f]/.test(clonePath)) refuse(within);
  const rel = posix.relative(root, posix.normalize(clonePath));
  if (rel.startsWith('..') || isAbsolute(rel)) refuse(within);
  if (rel === '') refuse(`${within}, below it`);
  const projectDir = options.buildsDir ? join(dirs.slotDir, rel) : join(runner.builds_dir, rel);
  // The runner's own dirs stay out of reach: the job's state (its trace), and the shell's slot tree.
  const own = [dirs.tmpDir, ...(options.buildsDir ? [] : [join(runner.builds_dir, shortToken(runner.token)), join(runner.builds_dir, legacyTokenDir(runner.token))])];
  if (own.some((dir) => inside(dir, projectDir) || inside(projectDir, dir))) refuse(`${within}, away from the runner's own directories (the job's state, and with the shell executor ${join(root, shortToken(runner.token))})`);
  await mkdir(`${projectDir}.tmp`, { recursive: true });
  return { ...dirs, projectDir };
}
