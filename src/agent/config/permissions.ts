/**
 * config.toml holds runner tokens and says what the runner runs (and as whom: often root), so it
 * should be its owner's alone: `register` writes it 0600. A file others can read leaks the tokens; one
 * others can write hands them the runner. The commands that use the tokens warn about the first; `run`
 * refuses the second.
 */
import { stat } from 'node:fs/promises';

export interface ConfigPermissionProblem {
  message: string;
  /** Others (not only the group) can write it. */
  worldWritable: boolean;
}

/** What is wrong with a config file of `mode` at `path`, if anything. */
export function configPermissionProblem(path: string, mode: number): ConfigPermissionProblem | undefined {
  const bits = mode & 0o777;
  if ((bits & 0o066) === 0) return undefined;
  const who = [(bits & 0o060) !== 0 ? 'its group' : '', (bits & 0o006) !== 0 ? 'other users' : ''].filter(Boolean).join(' and ');
  const can = [(bits & 0o044) !== 0 ? 'read' : '', (bits & 0o022) !== 0 ? 'write' : ''].filter(Boolean).join(' and ');
  const why = (bits & 0o022) !== 0 ? 'runner tokens and what the runner runs' : 'runner tokens';
  return {
    message: `${path} is mode ${bits.toString(8).padStart(4, '0')}: ${who} can ${can} it (it holds ${why}); fix with: chmod 600 ${path}`,
    worldWritable: (bits & 0o002) !== 0,
  };
}

/** The problem with the file at `path`, if any (none when it cannot be looked at: loading reports that). */
export async function checkConfigPermissions(path: string): Promise<ConfigPermissionProblem | undefined> {
  const info = await stat(path).catch(() => undefined);
  return info?.isFile() ? configPermissionProblem(path, info.mode) : undefined;
}
