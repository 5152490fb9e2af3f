import { writeNewFile } from '../../util/new-file.js';
import { join } from 'node:path';
import type { ExportedVariable } from '../../executors/types.js';
import type { JobVariable } from './variables.js';

/**
 * File variables (§5.2 `file`): the value goes to a file in the state dir; the variable holds its path,
 * as `pathFor` says the stages see it (the docker executor mounts the state dir elsewhere).
 */
export async function materializeFileVariables(list: JobVariable[], stateDir: string, pathFor: (path: string) => string = (path) => path): Promise<ExportedVariable[]> {
  const out: ExportedVariable[] = [];
  for (const v of list) {
    if (v.file && /^[A-Za-z_][A-Za-z0-9_]*$/.test(v.key)) {
      const path = join(stateDir, v.key);
      await writeNewFile(path, v.value, 0o600);
      out.push({ key: v.key, value: pathFor(path) });
    } else out.push({ key: v.key, value: v.value });
  }
  return out;
}
