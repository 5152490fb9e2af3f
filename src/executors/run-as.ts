/**
 * The user shell jobs run as (global `user` / `run --user`), looked up once at start. Node has no
 * getpwnam, so the system's own tools answer: `getent passwd` (NSS, so LDAP users work too) and
 * `id -G` for the supplementary groups.
 */
import { lchown, lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { runCommand } from '../util/command.js';
import { CiRunnerError } from '../util/errors.js';

export interface RunAs {
  name: string;
  uid: number;
  gid: number;
  /** Supplementary group ids, the primary one included. */
  groups: number[];
  home: string;
}

export class UnknownUserError extends CiRunnerError {
  readonly exitCode = 2;
}

/** Looks `name` up; an unknown user is an UnknownUserError. */
export async function lookupUser(name: string): Promise<RunAs> {
  // Checked before it reaches getent's command line: "-s" would be read as an option.
  if (!/^[A-Za-z0-9_][A-Za-z0-9_.-]*\$?$/.test(name)) {
    throw new UnknownUserError('UNKNOWN_USER', `user ${JSON.stringify(name)} (config.toml \`user\` / --user) is not a valid user name`);
  }
  const entry = await output('getent', ['passwd', name]);
  const fields = entry.stdout.trim().split(':');
  if (entry.exitCode !== 0 || fields.length < 7) {
    throw new UnknownUserError('UNKNOWN_USER', `user "${name}" (config.toml \`user\` / --user) does not exist on this machine; create it (useradd --system ${name}) or remove the setting`);
  }
  const uid = Number(fields[2]);
  const gid = Number(fields[3]);
  const ids = await output('id', ['-G', name]);
  const groups = ids.stdout.trim().split(/\s+/).filter(Boolean).map(Number);
  return { name, uid, gid, groups: groups.length > 0 ? groups : [gid], home: fields[5] || '/' };
}

/** Standard output and exit code of a short command (0 only when it ran and succeeded). */
async function output(file: string, args: string[]): Promise<{ exitCode: number; stdout: string }> {
  const result = await runCommand(file, args, { maxBuffer: 1024 * 1024 });
  return { exitCode: result.failed ? (result.exitCode ?? 1) : 0, stdout: result.stdout };
}

/** Throws unless this process may switch to `runAs` (root, or already that user). */
export function checkCanSwitchTo(runAs: RunAs): void {
  const uid = process.getuid?.();
  if (uid !== 0 && uid !== runAs.uid) {
    throw new UnknownUserError('CANNOT_SWITCH_USER', `jobs cannot run as "${runAs.name}": the daemon is not running as root; run it as root or drop the \`user\` setting`);
  }
}

/** Makes `path` (and, with `recursive`, everything under it) owned by the job user. Symlinks are not followed. */
export async function giveToUser(runAs: RunAs, path: string, recursive = false): Promise<void> {
  const info = await lstat(path).catch(() => undefined);
  if (!info) return;
  if (info.uid !== runAs.uid || info.gid !== runAs.gid) await lchown(path, runAs.uid, runAs.gid);
  if (!recursive || !info.isDirectory()) return;
  for (const entry of await readdir(path)) await giveToUser(runAs, join(path, entry), true);
}

