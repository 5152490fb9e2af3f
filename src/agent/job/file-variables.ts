import { writeNewFile } from '../../util/new-file.js';
import { join } from 'node:path';
import type { ExportedVariable } from '../../executors/types.js';
import type { JobVariable } from './variables.js';

/**
 * GitLab's rule for a variable's name (`Ci::HasVariable`: letters, digits and `_`, at most 255
 * characters). A file variable's name becomes a file name in the job's state dir, so only a name that
 * holds to it may: no `/`, no `..`, and never one of the runner's own files there (each of those has a
 * `.` or a `-` in its name).
 */
const GITLAB_VARIABLE_NAME = /^[A-Za-z0-9_]{1,255}$/;

export function isValidVariableName(name: string): boolean {
  return GITLAB_VARIABLE_NAME.test(name);
}

/** The names of file variables that GitLab would never send (see isValidVariableName), for a warning. */
export function invalidFileVariables(list: readonly JobVariable[]): string[] {
  return list.filter((v) => v.file && !isValidVariableName(v.key)).map((v) => v.key);
}

/**
 * File variables (§5.2 `file`): the value goes to a file in the state dir; the variable holds its path,
 * as `pathFor` says the stages see it (the docker executor mounts the state dir elsewhere), and `file`
 * the path on this machine: the only way an executor learns which host files a job's variables are
 * (nothing derives a host path from a variable's value or name). A file variable whose name breaks
 * GitLab's rule is dropped (the caller warns, invalidFileVariables).
 */
export async function materializeFileVariables(list: JobVariable[], stateDir: string, pathFor: (path: string) => string = (path) => path): Promise<ExportedVariable[]> {
  const out: ExportedVariable[] = [];
  for (const v of list) {
    const visibility = v.public ? { public: true } : {};
    if (!v.file) out.push({ key: v.key, value: v.value, ...visibility });
    else if (isValidVariableName(v.key)) {
      const path = join(stateDir, v.key);
      await writeNewFile(path, v.value, 0o600);
      out.push({ key: v.key, value: pathFor(path), file: path, ...visibility });
    }
  }
  return out;
}
