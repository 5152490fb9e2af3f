import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { processContainment, sweepStaleCgroups, type Containment } from '../../src/executors/cgroup/containment.js';
import { isJobCgroupPath, killRecordedCgroup } from '../../src/executors/cgroup/job-cgroup.js';
import { isPopulated, killCgroup, listProcs, removeCgroup, type KillMethod } from '../../src/executors/cgroup/kill.js';
import { cgroupDirectory, ownCgroupDirectory, parseCgroup2Mounts, parseUnifiedCgroupPath } from '../../src/executors/cgroup/mount.js';
import { ShellExecutor } from '../../src/executors/shell/index.js';
import { MarkerSweeper } from '../../src/executors/shell/marker-sweeper.js';
import { processAlive } from '../../src/executors/shell/process-group.js';
import type { StageRequest } from '../../src/executors/types.js';

const HYBRID = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`;
const CONTAINER = `1200 1100 0:30 /system.slice/docker-abc.scope /sys/fs/cgroup ro,nosuid - cgroup2 cgroup rw
`;

describe('finding the cgroup v2 directory', () => {
  it('finds the unified mount of a hybrid host and a pure v2 mount', () => {
    expect(parseCgroup2Mounts(HYBRID)).toEqual([{ mountPoint: '/sys/fs/cgroup/unified', root: '/', readOnly: false }]);
    const pure = parseCgroup2Mounts('30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev - cgroup2 cgroup2 rw,nsdelegate\n');
    expect(cgroupDirectory(pure, '/system.slice/ci-runner.service')?.dir).toBe('/sys/fs/cgroup/system.slice/ci-runner.service');
  });

  it('maps a path through a mount of part of the tree and sees a read-only mount', () => {
    const [mount] = parseCgroup2Mounts(CONTAINER);
    expect(mount).toEqual({ mountPoint: '/sys/fs/cgroup', root: '/system.slice/docker-abc.scope', readOnly: true });
    expect(cgroupDirectory([mount!], '/system.slice/docker-abc.scope/inner')?.dir).toBe('/sys/fs/cgroup/inner');
    expect(cgroupDirectory([mount!], '/user.slice')).toBeUndefined();
    expect(cgroupDirectory([mount!], '/../escaped')).toBeUndefined();
  });

  it('reads the v2 line of /proc/self/cgroup and unescapes mount points', () => {
    expect(parseUnifiedCgroupPath('4:memory:/x\n0::/user.slice/session-1.scope\n')).toBe('/user.slice/session-1.scope');
    expect(parseUnifiedCgroupPath('4:memory:/x\n')).toBeUndefined();
    expect(parseCgroup2Mounts('41 31 0:38 / /mnt/with\\040space rw - cgroup2 none rw\n')[0]?.mountPoint).toBe('/mnt/with space');
  });

  it('never treats a path that is not a runner job cgroup as one', async () => {
    for (const path of ['/sys/fs/cgroup/unified', '/sys/fs/cgroup/unified/ci-runner/daemon-1-1', '/tmp/ci-runner/daemon-1-1/job-abcdef12', '/sys/fs/cgroup/unified/x/../ci-runner/daemon-1-1/job-abcdef12', 'ci-runner/daemon-1-1/job-abcdef12']) {
      expect(await isJobCgroupPath(path)).toBe(false);
      expect(await killRecordedCgroup(path)).toBe(0);
    }
  });
});

const containment: Containment = await processContainment();
const cgroups = containment.kind === 'cgroup' ? containment : undefined;
if (!cgroups) console.log(`skipping the cgroup tests: ${containment.kind === 'process-group' ? containment.reason : ''}`);

async function waitFor(predicate: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A job command that leaves a process with its own session and an empty environment, pid in `pidFile`. */
const escapee = (pidFile: string): string => `setsid env -i sh -c 'echo $$ > ${pidFile}; exec sleep 300' > /dev/null 2>&1 < /dev/null &`;

/** `setsid` forks when it leads its process group (as a detached child does): wait until that parent is gone and
 * the cgroup holds the sleep alone. */
async function untilOnlySleepIn(cgroup: string): Promise<void> {
  await waitFor(async () => {
    const pids = await listProcs(cgroup);
    if (pids.length !== 1) return false;
    const comm = await readFile(`/proc/${pids[0]}/comm`, 'utf8').catch(() => '');
    return comm.trim() === 'sleep';
  });
}

async function stage(executor: ShellExecutor, dir: string, commands: string[], signal = new AbortController().signal) {
  const chunks: Uint8Array[] = [];
  const request: StageRequest = { stage: 'build_script', commands, echoCommands: false, variables: [], workDir: dir, scriptDir: dir, output: (c) => chunks.push(c), signal };
  const result = await executor.runStage(request);
  return { result, output: Buffer.concat(chunks).toString('utf8') };
}

async function pidIn(file: string): Promise<number> {
  await waitFor(async () => /^\d+/.test(await readFile(file, 'utf8').catch(() => '')));
  return Number((await readFile(file, 'utf8')).trim());
}

describe.skipIf(!cgroups)('a job in its own cgroup', () => {
  it('runs every stage inside the job cgroup and says so', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cgroup-in-'));
    const executor = await ShellExecutor.create({ shell: 'bash', killGraceMs: 500 });
    expect(executor.containment).toBe(`cgroup v2 ${executor.cgroup}`);
    const { output } = await stage(executor, dir, ['cat /proc/self/cgroup']);
    expect(output).toMatch(new RegExp(`^0::.*/ci-runner/daemon-\\d+-\\d+/job-${executor.marker}$`, 'm'));
    await executor.cleanup();
    expect(existsSync(executor.cgroup!)).toBe(false);
  });

  it('has the stage\'s script move itself first, for bash and sh, where nothing can run before its first line', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cgroup-self-'));
    for (const shell of ['bash', 'sh'] as const) {
      const executor = await ShellExecutor.create({ shell, killGraceMs: 500 });
      const { output } = await stage(executor, dir, ['head -n 1 "$0"', 'cat /proc/$$/cgroup']);
      expect(output.split('\n')[0]).toContain(`>| '${executor.cgroup}/cgroup.procs'`);
      expect(output).toMatch(new RegExp(`^0::.*/job-${executor.marker}$`, 'm'));
      await executor.cleanup();
    }
  });

  it('runs both stages of a chain inside the job cgroup, moved by the chain\'s first line, for bash and sh', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cgroup-chain-'));
    for (const shell of ['bash', 'sh'] as const) {
      const executor = await ShellExecutor.create({ shell, killGraceMs: 500 });
      const chunks: Uint8Array[] = [];
      const base = { echoCommands: false, variables: [], workDir: dir, scriptDir: dir };
      const result = await executor.runChained({
        first: { ...base, stage: 'get_sources', commands: ['head -n 1 "$0"', 'cat /proc/$$/cgroup'], output: (c) => chunks.push(c), signal: new AbortController().signal },
        second: { ...base, stage: 'step_script', commands: ['cat /proc/$$/cgroup'] },
        between: () => '',
        began: () => undefined,
      });
      expect(result.second?.exitCode).toBe(0);
      const output = Buffer.concat(chunks).toString('utf8');
      expect(output.split('\n')[0]).toContain(`>| '${executor.cgroup}/cgroup.procs'`);
      expect(output.match(new RegExp(`^0::.*/job-${executor.marker}$`, 'gm'))).toHaveLength(2);
      await executor.cleanup();
    }
  });

  it('moves a bash stage before its BASH_ENV file runs, and no function from the environment stands in for echo', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cgroup-bashenv-'));
    const startup = join(dir, 'startup.sh');
    await writeFile(startup, `cat /proc/$$/cgroup > ${join(dir, 'seen')}\n`);
    const saved = { BASH_ENV: process.env.BASH_ENV, echo: process.env['BASH_FUNC_echo%%'] };
    process.env.BASH_ENV = startup;
    process.env['BASH_FUNC_echo%%'] = `() { touch ${join(dir, 'impostor')}; }`;
    try {
      const executor = await ShellExecutor.create({ shell: 'bash', killGraceMs: 500 });
      const { result } = await stage(executor, dir, ['true']);
      expect(result.exitCode).toBe(0);
      expect(await readFile(join(dir, 'seen'), 'utf8')).toMatch(new RegExp(`^0::.*/job-${executor.marker}$`, 'm'));
      await executor.cleanup();
      delete process.env.BASH_ENV;
      const second = await ShellExecutor.create({ shell: 'bash', killGraceMs: 500 });
      expect((await stage(second, dir, ['cat /proc/$$/cgroup'])).output).toMatch(new RegExp(`^0::.*/job-${second.marker}$`, 'm'));
      await second.cleanup();
      expect(existsSync(join(dir, 'impostor'))).toBe(false);
    } finally {
      for (const [key, value] of [['BASH_ENV', saved.BASH_ENV], ['BASH_FUNC_echo%%', saved.echo]] as const) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
    }
  });

  it('refuses to run a stage it could not move into the job cgroup, whether its script or the sh in front of it moves it', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cgroup-gone-'));
    const startup = join(dir, 'startup.sh');
    await writeFile(startup, 'true\n');
    const saved = process.env.BASH_ENV;
    try {
      // With a BASH_ENV file the sh wrapper makes the move; without, the script's first line does.
      for (const bashEnv of [undefined, startup]) {
        if (bashEnv === undefined) delete process.env.BASH_ENV;
        else process.env.BASH_ENV = bashEnv;
        const executor = await ShellExecutor.create({ shell: 'bash', killGraceMs: 500 });
        await executor.cleanup();
        const { result, output } = await stage(executor, dir, ['echo uncontained']);
        expect(result.exitCode).toBe(1);
        expect(output).toContain(`ERROR: the runner could not move this stage into its cgroup (${executor.cgroup}/cgroup.procs)`);
        expect(output).not.toContain('uncontained');
      }
    } finally {
      if (saved === undefined) delete process.env.BASH_ENV;
      else process.env.BASH_ENV = saved;
    }
  });

  it('kills a child that called setsid and cleared its environment when its stage ends', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cgroup-end-'));
    const executor = await ShellExecutor.create({ shell: 'bash', killGraceMs: 500 });
    const pidFile = join(dir, 'pid');
    const { result } = await stage(executor, dir, [escapee(pidFile), `while [ ! -s ${pidFile} ]; do sleep 0.05; done`]);
    expect(result.exitCode).toBe(0);
    const pid = await pidIn(pidFile);
    await waitFor(async () => !(await processAlive(pid)));
    await executor.cleanup();
    expect(existsSync(executor.cgroup!)).toBe(false);
  });

  it('sweeps a marked process the job moved out of its cgroup: in the daemon\'s paced pass, or at once without a sweeper', async () => {
    const own = await ownCgroupDirectory();
    if (!('dir' in own)) throw new Error(own.reason);
    for (const sweeper of [new MarkerSweeper({ paceMs: 200 }), undefined]) {
      const dir = await mkdtemp(join(tmpdir(), 'cgroup-left-'));
      const executor = await ShellExecutor.create({ shell: 'bash', killGraceMs: 500, ...(sweeper ? { sweeper } : {}) });
      const pidFile = join(dir, 'pid');
      // A root job can move a process of its own into another cgroup (here the test's); it keeps the marker.
      const leave = `setsid sh -c 'echo $$ > ${join(own.dir, 'cgroup.procs')} && echo $$ > ${pidFile} && exec sleep 2210' > /dev/null 2>&1 < /dev/null &`;
      const { result } = await stage(executor, dir, [leave, `while [ ! -s ${pidFile} ]; do sleep 0.05; done`]);
      expect(result.exitCode).toBe(0);
      const pid = await pidIn(pidFile);
      expect(await processAlive(pid)).toBe(true);
      await executor.cleanup();
      expect(existsSync(executor.cgroup!)).toBe(false);
      if (sweeper) await executor.settled();
      expect(await processAlive(pid)).toBe(false);
    }
  });

  it('kills a setsid child without the marker when the job is cancelled', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cgroup-cancel-'));
    const executor = await ShellExecutor.create({ shell: 'sh', killGraceMs: 500 });
    const pidFile = join(dir, 'pid');
    const controller = new AbortController();
    const running = stage(executor, dir, [escapee(pidFile), 'sleep 1102'], controller.signal);
    const pid = await pidIn(pidFile);
    expect(await processAlive(pid)).toBe(true);
    controller.abort(new Error('canceled'));
    expect((await running).result.aborted).toBe(true);
    await waitFor(async () => !(await processAlive(pid)));
    await executor.cleanup();
  });

  it('removes the job cgroups of a daemon that is gone, killing what is left in them', async () => {
    const dead = join(dirname(cgroups!.daemonDir), 'daemon-999999999-1');
    const job = join(dead, 'job-0123456789abcdef');
    await mkdir(job, { recursive: true });
    const child = spawn('/bin/sh', ['-c', `echo $$ > ${join(job, 'cgroup.procs')}; exec setsid env -i sleep 300`], { stdio: 'ignore', detached: true });
    child.unref();
    await untilOnlySleepIn(job);
    const swept = await sweepStaleCgroups(cgroups!);
    expect(swept).toEqual({ cgroups: 1, killed: 1 });
    expect(existsSync(dead)).toBe(false);
    await waitFor(async () => !(await processAlive(child.pid!)));
  });
});

describe.skipIf(!cgroups)('recovering a crashed job', () => {
  it('kills what is left in the cgroup recorded in its state dir and removes it', async () => {
    const dead = join(dirname(cgroups!.daemonDir), 'daemon-999999998-1');
    const job = join(dead, 'job-fedcba9876543210');
    await mkdir(job, { recursive: true });
    const child = spawn('/bin/sh', ['-c', `echo $$ > ${join(job, 'cgroup.procs')}; exec setsid env -i sleep 300`], { stdio: 'ignore', detached: true });
    child.unref();
    await untilOnlySleepIn(job);
    expect(await killRecordedCgroup(job)).toBe(1);
    expect(existsSync(dead)).toBe(false);
    await waitFor(async () => !(await processAlive(child.pid!)));
  });

  it('leaves the cgroup of a job whose daemon still runs alone', async () => {
    const executor = await ShellExecutor.create({ shell: 'sh', killGraceMs: 500 });
    const dir = await mkdtemp(join(tmpdir(), 'cgroup-live-'));
    const controller = new AbortController();
    const running = stage(executor, dir, ['sleep 1101'], controller.signal);
    await waitFor(async () => (await listProcs(executor.cgroup!)).length > 0);
    expect(await killRecordedCgroup(executor.cgroup!)).toBe(0);
    expect(await isPopulated(executor.cgroup!)).toBe(true);
    controller.abort();
    await running;
    await executor.cleanup();
  });
});

describe.skipIf(!cgroups)('killing a cgroup on kernels without cgroup.kill', () => {
  it.each(['freeze', 'signal'] as KillMethod[])('empties a cgroup whose member keeps forking (%s)', async (method) => {
    const dir = join(cgroups!.daemonDir, `job-${method === 'freeze' ? 'f' : 'e'}0000000000000000`);
    await mkdir(dir);
    // Starts a new background process every few ms while it is being killed (bounded: the machine is shared).
    const bomb = `echo $$ > ${join(dir, 'cgroup.procs')}; i=0; while [ $i -lt 1000 ]; do setsid sleep 300 & i=$((i+1)); sleep 0.005; done`;
    const child = spawn('/bin/bash', ['-c', bomb], { stdio: 'ignore', detached: true });
    child.unref();
    await waitFor(async () => (await listProcs(dir)).length > 20);
    expect(await killCgroup(dir, method, 30_000)).toBe(true);
    expect(await isPopulated(dir)).toBe(false);
    expect(await removeCgroup(dir)).toBe(true);
  });
});
