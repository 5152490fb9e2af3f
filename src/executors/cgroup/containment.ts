/**
 * Which process containment this process can give jobs, decided once per process.
 *
 * Where cgroup v2 is writable (root, a writable `cgroup2` mount), every job gets its own cgroup:
 * a process cannot leave its cgroup by `setsid`, double forks or clearing its environment, so killing
 * the cgroup kills all of the job. The tree is
 *
 *     <the daemon's own cgroup>/ci-runner/daemon-<pid>-<start time>/job-<marker>
 *
 * Under the daemon's own cgroup, so whoever manages the daemon manages its jobs too (systemd's final
 * SIGKILL of `ci-runner.service` reaches them; give the unit `Delegate=yes`, as systemd asks of a
 * service that makes sub-cgroups). The daemon itself stays in an inner node: cgroup v2's "no internal
 * processes" rule only forbids that once controllers are enabled in `cgroup.subtree_control`, and the
 * runner enables none — it uses cgroups for membership and killing, not for limits. A node per daemon
 * process (pid plus start time, so a reused pid is not mistaken for it) lets a restarted daemon tell
 * the job cgroups of a dead run (killed and removed at start) from those of a live one sharing the
 * same parent (another daemon or `run-once` started from the same shell). The liveness check reads
 * /proc, so two daemons in different pid namespaces must not share a cgroup (containers each get their
 * own cgroup, so they do not).
 *
 * Elsewhere the shell executor falls back to its process group plus the /proc marker sweep, which it
 * also keeps as a second sweep when cgroups are in use.
 */
import { mkdir, readdir, readFile } from 'node:fs/promises';
import { rmdirSync } from 'node:fs';
import { join } from 'node:path';
import { lastLine, runCommand } from '../../util/command.js';
import type { Logger } from '../../log/index.js';
import { isPopulated, killCgroup, killMethodOf, listProcs, removeCgroup, type KillMethod } from './kill.js';
import { ownCgroupDirectory } from './mount.js';

/** Set to `off` in the daemon's environment to use the process-group fallback even where cgroups work. */
export const CGROUPS_SWITCH_VARIABLE = 'CI_RUNNER_CGROUPS';
export const PARENT_NAME = 'ci-runner';
export const DAEMON_NODE = /^daemon-(\d+)-(\d+)$/;
export const JOB_NODE = /^job-[0-9a-f]{8,64}$/;

export type Containment =
  | { kind: 'cgroup'; /** This process's node; job cgroups go below it. */ daemonDir: string; method: KillMethod }
  | { kind: 'process-group'; reason: string };

/** The line for logs: `cgroup v2 <dir>` or `process group + marker sweep (cgroups not available: <why>)`. */
export function describeContainment(containment: Containment, dir?: string): string {
  return containment.kind === 'cgroup'
    ? `cgroup v2 ${dir ?? containment.daemonDir}`
    : `process group + marker sweep (cgroups not available: ${containment.reason})`;
}

/** Field 22 of /proc/<pid>/stat: start time in clock ticks since boot; undefined when gone. */
export async function processStartTime(pid: number | 'self'): Promise<string | undefined> {
  const text = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  return text?.slice(text.lastIndexOf(')') + 2).split(' ')[19];
}

function errorReason(action: string, path: string, error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
  const hint = code === 'EACCES' || code === 'EPERM' ? ' (not running as root?)' : code === 'EROFS' ? ' (read-only cgroup mount)' : '';
  return `cannot ${action} ${path}: ${code}${hint}`;
}

async function mkdirIfMissing(dir: string): Promise<void> {
  await mkdir(dir).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'EEXIST') throw error;
  });
}

/** Moves a throwaway shell into `dir` the way stages enter theirs; rejects with the shell's error. */
async function probeEntering(dir: string): Promise<void> {
  const result = await runCommand('/bin/sh', ['-c', 'echo $$ > "$1"', 'ci-runner-probe', join(dir, 'cgroup.procs')], { timeoutMs: 10_000 });
  if (result.failed) throw new Error(lastLine(result.stderr) || result.shortMessage);
}

async function detect(): Promise<Containment> {
  if (process.env[CGROUPS_SWITCH_VARIABLE] === 'off') return { kind: 'process-group', reason: `turned off by ${CGROUPS_SWITCH_VARIABLE}=off` };
  if (process.platform !== 'linux') return { kind: 'process-group', reason: `cgroups are Linux-only (this is ${process.platform})` };
  const own = await ownCgroupDirectory();
  if ('reason' in own) return { kind: 'process-group', reason: own.reason };
  const parent = join(own.dir, PARENT_NAME);
  const daemonDir = join(parent, `daemon-${process.pid}-${(await processStartTime('self')) ?? '0'}`);
  try {
    await mkdirIfMissing(parent);
  } catch (error) {
    return { kind: 'process-group', reason: errorReason('create', parent, error) };
  }
  try {
    await mkdirIfMissing(daemonDir);
  } catch (error) {
    return { kind: 'process-group', reason: errorReason('create', daemonDir, error) };
  }
  const probe = join(daemonDir, 'probe');
  try {
    await mkdirIfMissing(probe);
    await probeEntering(probe);
  } catch (error) {
    await removeCgroup(probe);
    await removeCgroup(daemonDir);
    return { kind: 'process-group', reason: `cannot move a process into a cgroup under ${daemonDir}: ${(error as Error).message}` };
  }
  await removeCgroup(probe);
  // Best effort: the node of a daemon that exits normally goes with it; a crashed one is swept later.
  process.once('exit', () => {
    try {
      rmdirSync(daemonDir);
    } catch {
      // a job cgroup is still there (cleanup failed); the next start sweeps it
    }
  });
  return { kind: 'cgroup', daemonDir, method: await killMethodOf(daemonDir) };
}

let detected: Promise<Containment> | undefined;

/**
 * The containment jobs of this process get. The first call decides (and logs it, with `logger`),
 * and removes the job cgroups of daemons that are no longer running.
 */
export function processContainment(logger?: Logger): Promise<Containment> {
  detected ??= detect().then(async (containment) => {
    if (containment.kind === 'cgroup') {
      logger?.info({ containment: 'cgroup v2', cgroup: containment.daemonDir, kill: containment.method }, `process containment: ${describeContainment(containment)}`);
      const swept = await sweepStaleCgroups(containment).catch(() => ({ cgroups: 0, killed: 0 }));
      if (swept.cgroups > 0) logger?.info(swept, 'removed the job cgroups of an earlier run');
    } else {
      logger?.info({ containment: 'process group' }, `process containment: ${describeContainment(containment)}`);
    }
    return containment;
  });
  return detected;
}

/** True while the daemon that owns node `name` (`daemon-<pid>-<start>`) runs. */
export async function daemonNodeAlive(name: string): Promise<boolean> {
  const match = DAEMON_NODE.exec(name);
  if (!match) return false;
  return (await processStartTime(Number(match[1]))) === match[2];
}

/** Kills and removes every job cgroup under `daemonDir`, then the node itself. */
export async function removeDaemonNode(daemonDir: string, method: KillMethod): Promise<{ cgroups: number; killed: number }> {
  let cgroups = 0;
  let killed = 0;
  const children = await readdir(daemonDir, { withFileTypes: true }).catch(() => []);
  for (const child of children) {
    if (!child.isDirectory()) continue;
    const dir = join(daemonDir, child.name);
    if (await isPopulated(dir)) killed += (await listProcs(dir)).length;
    await killCgroup(dir, method);
    if (await removeCgroup(dir)) cgroups += 1;
  }
  await removeCgroup(daemonDir, 1);
  return { cgroups, killed };
}

/** Removes the nodes of daemons that are gone, killing what is left in them. */
export async function sweepStaleCgroups(containment: Extract<Containment, { kind: 'cgroup' }>): Promise<{ cgroups: number; killed: number }> {
  const parent = join(containment.daemonDir, '..');
  const total = { cgroups: 0, killed: 0 };
  for (const entry of await readdir(parent, { withFileTypes: true })) {
    if (!entry.isDirectory() || !DAEMON_NODE.test(entry.name) || (await daemonNodeAlive(entry.name))) continue;
    const result = await removeDaemonNode(join(parent, entry.name), containment.method);
    total.cgroups += result.cgroups;
    total.killed += result.killed;
  }
  return total;
}
