/**
 * config.toml holds runner tokens and says what the runner runs (and as whom: often root), so it
 * should be its owner's alone: `register` writes it 0600. A file others can read leaks the tokens; one
 * others can write hands them the runner. The commands that use the tokens warn about the first; `run`
 * refuses the second.
 *
 * A file another user owns that the runner reads through its own group (a Kubernetes Secret mounted
 * 0440 with `fsGroup`: root owns it, the pod's group reads it) has its group bit for the runner's
 * sake: that read is not a warning, and `chmod 600` would only lock the runner out.
 */
import { stat } from 'node:fs/promises';

export interface ConfigPermissionProblem {
  message: string;
  /** Others (not only the group) can write it. */
  worldWritable: boolean;
}

/** How the runner reaches the file: true when another user owns it and the runner's groups include its group. */
export interface ConfigReader {
  readsThroughGroup: boolean;
}

/** What is wrong with a config file of `mode` at `path`, if anything. */
export function configPermissionProblem(path: string, mode: number, reader: ConfigReader = { readsThroughGroup: false }): ConfigPermissionProblem | undefined {
  const shown = mode & 0o777;
  const bits = reader.readsThroughGroup ? shown & ~0o040 : shown;
  if ((bits & 0o066) === 0) return undefined;
  const who = [(bits & 0o060) !== 0 ? 'its group' : '', (bits & 0o006) !== 0 ? 'other users' : ''].filter(Boolean).join(' and ');
  const can = [(bits & 0o044) !== 0 ? 'read' : '', (bits & 0o022) !== 0 ? 'write' : ''].filter(Boolean).join(' and ');
  const why = (bits & 0o022) !== 0 ? 'runner tokens and what the runner runs' : 'runner tokens';
  const fix = reader.readsThroughGroup ? ((shown & 0o700) | 0o040).toString(8) : '600';
  return {
    message: `${path} is mode ${shown.toString(8).padStart(4, '0')}: ${who} can ${can} it (it holds ${why}); fix with: chmod ${fix} ${path}`,
    worldWritable: (bits & 0o002) !== 0,
  };
}

/** The problem with the file at `path`, if any (none when it cannot be looked at: loading reports that). */
export async function checkConfigPermissions(path: string): Promise<ConfigPermissionProblem | undefined> {
  const info = await stat(path).catch(() => undefined);
  if (!info?.isFile()) return undefined;
  const uid = process.geteuid?.();
  const groups = [process.getegid?.(), ...(process.getgroups?.() ?? [])];
  const readsThroughGroup = uid !== undefined && info.uid !== uid && groups.includes(info.gid);
  return configPermissionProblem(path, info.mode, { readsThroughGroup });
}
