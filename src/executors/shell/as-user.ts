/**
 * Running a stage as the job user (global `user`) from a root daemon. Node's own `uid`/`gid` spawn
 * options drop every supplementary group (libuv calls setgroups(0)), so a user in the `docker` group
 * could not reach the engine; util-linux's `setpriv` switches uid, gid and groups and then execs the
 * shell in place, so the pid (and process group) stays the one we spawned.
 */
import { lchown } from 'node:fs/promises';
import type { RunAs } from '../run-as.js';

export interface UserCommand {
  file: string;
  args: string[];
}

/** The command line that runs `shell script` as `runAs` (its environment: userEnvironment). */
export function commandAsUser(runAs: RunAs, shell: string, scriptPath: string): UserCommand {
  return {
    file: 'setpriv',
    args: ['--reuid', String(runAs.uid), '--regid', String(runAs.gid), '--groups', runAs.groups.join(','), '--', shell, scriptPath],
  };
}

/** What the job user's stages get in their environment in place of the daemon's: HOME, USER, LOGNAME. */
export function userEnvironment(runAs: RunAs): Record<string, string> {
  return { HOME: runAs.home, USER: runAs.name, LOGNAME: runAs.name };
}

/** The generated script is written 0600 by root; the job user must be able to read it (the link itself, were it one). */
export async function giveScript(runAs: RunAs, scriptPath: string): Promise<void> {
  await lchown(scriptPath, runAs.uid, runAs.gid);
}
