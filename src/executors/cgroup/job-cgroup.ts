/**
 * One job's cgroup: created when the job's executor is, entered by each stage before it runs user
 * code, killed when a stage ends or is cancelled, removed when the job ends. Its path is saved in the
 * job's state dir so a daemon restarted after a crash can kill what the job left (`killRecordedCgroup`).
 */
import { mkdir } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, normalize } from 'node:path';
import { DAEMON_NODE, daemonNodeAlive, JOB_NODE, PARENT_NAME, type Containment } from './containment.js';
import { isPopulated, killCgroup, killMethodOf, listProcs, removeCgroup, signalProcs, waitEmpty, type KillMethod } from './kill.js';
import { insideCgroup2Mount } from './mount.js';

export class JobCgroup {
  private constructor(
    readonly dir: string,
    private readonly method: KillMethod,
  ) {}

  /** Creates `job-<name>` under this process's node; rejects when the kernel refuses. */
  static async create(containment: Extract<Containment, { kind: 'cgroup' }>, name: string): Promise<JobCgroup> {
    const dir = join(containment.daemonDir, `job-${name}`);
    await mkdir(dir);
    return new JobCgroup(dir, containment.method);
  }

  /** The file a process writes its own pid to, to enter this cgroup. */
  get procsFile(): string {
    return join(this.dir, 'cgroup.procs');
  }

  populated(): Promise<boolean> {
    return isPopulated(this.dir);
  }

  /** Sends `signal` to every member (the graceful first step of a stop). */
  signal(signal: NodeJS.Signals): Promise<number> {
    return signalProcs(this.dir, signal);
  }

  waitEmpty(ms: number): Promise<boolean> {
    return waitEmpty(this.dir, ms);
  }

  /** SIGKILLs every member until none is left; true when empty. */
  kill(): Promise<boolean> {
    return killCgroup(this.dir, this.method);
  }

  /** Kills what is left and removes the directory; true when it is gone. */
  async destroy(): Promise<boolean> {
    await this.kill();
    return removeCgroup(this.dir);
  }
}

/**
 * True when `path` has the shape of a job cgroup this runner made
 * (`…/ci-runner/daemon-<pid>-<start>/job-<hex>` inside a cgroup2 mount). The path comes from a file
 * on disk; anything else — above all a cgroup holding the rest of the machine — is never touched.
 */
export async function isJobCgroupPath(path: string): Promise<boolean> {
  if (!isAbsolute(path) || normalize(path) !== path || !JOB_NODE.test(basename(path))) return false;
  const daemonNode = dirname(path);
  if (!DAEMON_NODE.test(basename(daemonNode)) || basename(dirname(daemonNode)) !== PARENT_NAME) return false;
  return insideCgroup2Mount(path);
}

/**
 * Kills what is left in the job cgroup at `path` (read from a job's state dir after a crash) and
 * removes it, and its daemon's node once that is empty and its daemon gone. The number of processes
 * killed; 0 when the path is not a job cgroup, is gone already, or belongs to a daemon still running.
 */
export async function killRecordedCgroup(path: string): Promise<number> {
  if (!(await isJobCgroupPath(path))) return 0;
  const daemonNode = dirname(path);
  if (await daemonNodeAlive(basename(daemonNode))) return 0;
  const killed = (await isPopulated(path)) ? (await listProcs(path)).length : 0;
  await killCgroup(path, await killMethodOf(path));
  await removeCgroup(path);
  await removeCgroup(daemonNode, 1);
  return killed;
}
