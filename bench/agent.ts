/**
 * Agent benchmark: per-job overhead of a trivial job (pickup → final state accepted,
 * minus the script's own time: from its shell's start, or from the moment the build began in
 * get_sources' process when the two are chained), p50/p95 over 50 jobs, and the whole job's time
 * beside the floor of its processes; wall time of 20 trivial jobs with concurrent =
 * 2 — each over both runner APIs, v1 and v4; how long a cancel of a job that prints nothing takes to
 * reach the runner (the server's cancel → the script stopped), over both APIs; then the idle figures
 * of bench/idle.ts (`run` settled, after a job, after reloads, next to a bare node). The overhead is
 * printed beside its floor (one `git fetch` into a kept clone plus one `bash -c true`, same run) and
 * the 20-job wall beside GitLab Runner 1.11's 29 s (issue 24's rig), its floor (the jobs' own processes
 * with no runner around them) and this process's CPU over it; a debug-logged run gives the
 * p50 of each step of the job's timeline (src/agent/job/timeline.ts).
 * The reference server runs in this process (so it shares the CPU with the agent), except for the
 * 20-job figure taken as the rig took GitLab Runner's: `ci-runner run` and the server each in a
 * process of its own (daemon-pipeline.ts); the idle daemon is a separate process too. Figures are
 * printed, not asserted.
 */
import { SCRIPT_STEP, stepStage } from '../src/executors/common/stages.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { execa } from 'execa';
import { Agent } from '../src/agent/agent.js';
import { RunnerApiClient } from '../src/client/runner-api.js';
import { configSchema } from '../src/agent/config/schema.js';
import { defaultServices } from '../src/agent/services.js';
import type { Executor, ExportedVariable } from '../src/executors/types.js';
import { silentLogger, type Logger } from '../src/log/index.js';
import { createReferenceServer, type ReferenceServer } from '../src/server/index.js';
import { createGitRepo } from '../test/helpers/git.js';
import { daemonPipeline } from './daemon-pipeline.js';
import { printIdle } from './idle.js';
import { percentile, pickupTimer, register, runToEnd, stepMedians, timelineLogger } from './support.js';

/** The stage a job's script runs in (GitLab Runner's `step_script`). */
const SCRIPT_STAGE = stepStage(SCRIPT_STEP);

/** `git`: `none` (no checkout), `full` (GIT_DEPTH 0 whatever the server's default), or the server's default. */
function jobs(n: number, git?: 'none' | 'full'): string {
  const vars = git === 'none' ? 'variables:\n  GIT_STRATEGY: none\n' : git === 'full' ? 'variables:\n  GIT_DEPTH: "0"\n' : '';
  return vars + Array.from({ length: n }, (_, i) => `job${i}:\n  script:\n    - "true"\n`).join('');
}

type Api = 'v1' | 'v4';

/** What a later job's get_sources does in a kept checkout already at its commit. */
const RESET_CHECKOUT = 'git clean -ffdx -q && git reset --hard -q';

/** GitLab Runner 1.11's wall for 20 trivial jobs at concurrent = 2 on issue 24's rig, in s. */
const PEER_20_JOBS_S = 29;

/**
 * What a job cannot go below: one `git fetch` into a kept clone and one `bash -c true`, median of `runs`;
 * for a later job at the same commit (no fetch), `kept`: a shell running `git clean` and `git reset
 * --hard` in the clone, then a shell for the script, started from this process as the runner starts
 * its stages; and the clone, which processFloor reuses.
 */
async function overheadFloor(server: ReferenceServer, root: string, runs: number): Promise<{ fetch: number; bash: number; kept: number; clone: string }> {
  // A job of its own, held running, so its repo_url (with the job's token) lets git in.
  const token = await register(server);
  await server.createPipeline({ project: 'bench/project', config: 'floor:\n  script: ["true"]\n' });
  const client = new RunnerApiClient({ url: server.url });
  const answer = await client.requestBuild(token, undefined);
  await client.close();
  if (answer.kind !== 'build') throw new Error(`no job for the floor (${answer.kind})`);
  const clone = join(root, 'floor-clone');
  await execa('git', ['clone', '-q', answer.build.repo_url, clone]);
  const fetches: number[] = [];
  const shells: number[] = [];
  const kept: number[] = [];
  for (let i = 0; i < runs; i += 1) {
    let t0 = performance.now();
    await execa('git', ['fetch', '-q', '--prune', 'origin', '+refs/heads/*:refs/remotes/origin/*'], { cwd: clone });
    fetches.push(performance.now() - t0);
    t0 = performance.now();
    await execa('bash', ['-c', 'true']);
    shells.push(performance.now() - t0);
    t0 = performance.now();
    await execa('bash', ['-c', RESET_CHECKOUT], { cwd: clone });
    await execa('bash', ['-c', 'true']);
    kept.push(performance.now() - t0);
  }
  const p50 = (list: number[]): number => percentile(list.sort((a, b) => a - b), 50);
  return { fetch: p50(fetches), bash: p50(shells), kept: p50(kept), clone };
}

/**
 * What `jobs` trivial jobs at `concurrent` cannot go below on this machine: each job's own processes (a
 * shell running `git clean` and `git reset --hard` in the kept `clone`, then a shell running the
 * script), started by `concurrent` shells side by side with no runner around them. The wall, in ms.
 */
async function processFloor(clone: string, jobs: number, concurrent: number): Promise<number> {
  const loop = `for i in $(seq ${Math.ceil(jobs / concurrent)}); do bash -c '${RESET_CHECKOUT}'; bash -c true; done`;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: concurrent }, () => execa('bash', ['-c', loop], { cwd: clone })));
  return performance.now() - t0;
}

/**
 * How long starting one process blocks this process's event loop, p50 of `runs`, in ms: Node forks on
 * Linux (libuv uses posix_spawn only on macOS), so the cost grows with the parent's memory, and the
 * runner pays it for each stage it starts.
 */
async function spawnBlocks(runs: number): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < runs; i += 1) {
    const t0 = performance.now();
    const child = spawn('true', { stdio: 'ignore' });
    times.push(performance.now() - t0);
    await once(child, 'exit');
  }
  return percentile(times.sort((a, b) => a - b), 50);
}

/**
 * What a timing wrapper keeps of the real executor besides its stages: its name, its cleanup, and the
 * marker and cgroup the job records in its state dir, so the measured job does what a real one does.
 */
function passThrough(inner: Executor): Pick<Executor, 'name' | 'marker' | 'cgroup' | 'containment' | 'cleanup' | 'settled'> {
  return {
    name: inner.name,
    cleanup: () => inner.cleanup(),
    ...(inner.settled ? { settled: inner.settled.bind(inner) } : {}),
    ...(inner.marker ? { marker: inner.marker } : {}),
    ...(inner.cgroup ? { cgroup: inner.cgroup } : {}),
    ...(inner.containment ? { containment: inner.containment } : {}),
  };
}

async function runPipeline(server: ReferenceServer, root: string, n: number, concurrent: number, api: Api, gitStrategy?: 'none' | 'full', logger: Logger = silentLogger()) {
  const token = await register(server);
  const config = configSchema.parse({
    concurrent,
    check_interval: 3,
    runners: [{ name: 'bench', url: server.url, token, api, builds_dir: join(root, `builds-${concurrent}-${api}-${gitStrategy ?? 'default'}`), cache_dir: join(root, 'cache') }],
  });
  const services = defaultServices(logger);
  const scriptMs = new Map<number, number>();
  const overhead: number[] = [];
  const whole: number[] = [];
  const stageMs = new Map<string, number[]>();
  const agent = new Agent(
    config,
    {
      ...services,
      createExecutor: async (runner) => {
        const inner = await services.createExecutor(runner);
        const record = (stage: string, variables: ExportedVariable[], ms: number): void => {
          stageMs.set(stage, [...(stageMs.get(stage) ?? []), ms]);
          if (stage === SCRIPT_STAGE) scriptMs.set(Number(variables.find((v) => v.key === 'CI_JOB_ID')?.value), ms);
        };
        const runChained = inner.runChained?.bind(inner);
        const timed: Executor = {
          ...passThrough(inner),
          runStage: async (request) => {
            const t0 = performance.now();
            const result = await inner.runStage(request);
            record(request.stage, request.variables, performance.now() - t0);
            return result;
          },
          // get_sources and the build in one process: the build's time runs from the moment it began.
          ...(runChained
            ? {
                runChained: async (chain) => {
                  const t0 = performance.now();
                  let began: number | undefined;
                  const result = await runChained({ ...chain, began: (at) => chain.began((began = at)) });
                  const t1 = performance.now();
                  record(chain.first.stage, chain.first.variables, (began ?? t1) - t0);
                  if (began !== undefined) record(chain.second.stage, chain.second.variables, t1 - began);
                  return result;
                },
              }
            : {}),
        };
        return timed;
      },
    },
    pickupTimer((id, ms) => {
      whole.push(ms);
      overhead.push(ms - (scriptMs.get(id) ?? 0));
    }),
  );
  const pipeline = await server.createPipeline({ project: 'bench/project', config: jobs(n, gitStrategy) });
  const cpu0 = process.cpuUsage();
  const wall = await runToEnd(agent, () => server.getPipeline(pipeline.id)?.status);
  const used = process.cpuUsage(cpu0);
  const stages = [...stageMs].map(([name, list]) => `${name} p50 ${percentile(list.sort((a, b) => a - b), 50).toFixed(0)} ms`).join(', ');
  return { wall, cpuMs: (used.user + used.system) / 1000, stages, overhead: overhead.sort((a, b) => a - b), whole: whole.sort((a, b) => a - b), scripts: [...scriptMs.values()].sort((a, b) => a - b) };
}

export async function run(): Promise<void> {
  const root = await mkdtemp(join(tmpdir(), 'ci-runner-bench-agent-'));
  const repo = await createGitRepo({ 'README.md': '# bench\n' });
  const server = await createReferenceServer({ projects: [{ name: 'bench/project', path: repo }], logger: silentLogger() });
  try {
    const fmt = (ms: number) => `${ms.toFixed(0)} ms`;
    const floor = await overheadFloor(server, root, 20);
    process.stdout.write(
      `floor: one \`git fetch\` into a kept clone p50 ${fmt(floor.fetch)} + one \`bash -c true\` p50 ${fmt(floor.bash)} = ${fmt(floor.fetch + floor.bash)} (aim: overhead ≤ 60 ms; GitLab Runner 1.11: ~1.6–1.9 s);` +
        ` a later job at the same commit (no fetch): a shell with \`git clean\` + \`git reset\`, then a shell for the script, p50 ${fmt(floor.kept)}\n`,
    );
    for (const api of ['v1', 'v4'] as const) {
      const single = await runPipeline(server, root, 50, 1, api);
      const p50 = percentile(single.overhead, 50);
      process.stdout.write(
        `[${api}] per-job overhead, 50 trivial jobs, concurrent=1: p50 ${fmt(p50)} (floor + ${fmt(p50 - floor.fetch - floor.bash)}${api === 'v4' ? `; no-fetch floor + ${fmt(p50 - floor.kept)}` : ''}), p95 ${fmt(percentile(single.overhead, 95))}` +
          ` (script itself: p50 ${fmt(percentile(single.scripts, 50))}; whole pipeline ${(single.wall / 1000).toFixed(2)} s)\n` +
          `  whole job, script included: p50 ${fmt(percentile(single.whole, 50))}${api === 'v4' ? ` (no-fetch floor, its processes alone: ${fmt(floor.kept)})` : ''}; stages: ${single.stages}\n`,
      );
    }
    for (const api of ['v1', 'v4'] as const) {
      const steps = new Map<string, number[]>();
      await runPipeline(server, root, 20, 1, api, undefined, timelineLogger(steps));
      process.stdout.write(`[${api}] timeline of 20 trivial jobs (--debug), p50 ms per step:\n  ${stepMedians(steps)}\n`);
    }
    // The same checkout on both APIs: the reference server's v4 jobs default to GitLab's shallow depth
    // 20 (v1's to a full fetch), and a shallow fetch costs git one more round trip.
    for (const api of ['v1', 'v4'] as const) {
      const full = await runPipeline(server, root, 50, 1, api, 'full');
      process.stdout.write(`[${api}] per-job overhead with a full fetch (GIT_DEPTH 0), 50 jobs: p50 ${fmt(percentile(full.overhead, 50))}, p95 ${fmt(percentile(full.overhead, 95))}\n  stages: ${full.stages}\n`);
    }
    for (const api of ['v1', 'v4'] as const) {
      const noGit = await runPipeline(server, root, 50, 1, api, 'none');
      process.stdout.write(`[${api}] per-job overhead without git (GIT_STRATEGY none), 50 jobs: p50 ${fmt(percentile(noGit.overhead, 50))}, p95 ${fmt(percentile(noGit.overhead, 95))}\n`);
    }
    const processes = await processFloor(floor.clone, 20, 2);
    process.stdout.write(
      `floor of 20 trivial jobs at concurrent=2: their own processes alone (a shell with \`git clean\` + \`git reset\`, a shell with the script; two shells side by side) ${(processes / 1000).toFixed(2)} s;` +
        ` each process started from this one blocks its event loop p50 ${(await spawnBlocks(20)).toFixed(1)} ms (a runner stage starts 1)\n`,
    );
    for (const api of ['v1', 'v4'] as const) {
      const pair = await runPipeline(server, root, 20, 2, api);
      const ratio = pair.wall / 1000 / PEER_20_JOBS_S;
      process.stdout.write(
        `[${api}] 20 trivial jobs, concurrent=2: wall ${(pair.wall / 1000).toFixed(2)} s (GitLab Runner 1.11: ${PEER_20_JOBS_S} s, so ${ratio.toFixed(3)}×; aim ≤ 0.04×);` +
          ` this process's CPU (runner and in-process server) ${(pair.cpuMs / 1000).toFixed(2)} s\n`,
      );
    }
    // As the rig ran GitLab Runner: the daemon as it ships and the server, each in a process of its own.
    for (const api of ['v1', 'v4'] as const) {
      const daemon = await daemonPipeline(root, 20, 2, api);
      const ratio = daemon.wallMs / 1000 / PEER_20_JOBS_S;
      process.stdout.write(
        `[${api}] 20 trivial jobs, concurrent=2, \`ci-runner run\` and the server each in a process of its own: wall ${(daemon.wallMs / 1000).toFixed(2)} s (${ratio.toFixed(3)}×; aim ≤ 0.04×);` +
          ` the daemon's CPU ${(daemon.cpuMs / 1000).toFixed(2)} s, the server's ${(daemon.serverCpuMs / 1000).toFixed(2)} s${daemon.status === 'success' ? '' : ` (the pipeline ended ${daemon.status})`}\n`,
      );
    }
    for (const api of ['v1', 'v4'] as const) {
      const pair = await runPipeline(server, root, 20, 2, api, 'full');
      process.stdout.write(`[${api}] 20 trivial jobs with a full fetch (GIT_DEPTH 0), concurrent=2: wall ${(pair.wall / 1000).toFixed(2)} s\n`);
    }
    for (const api of ['v1', 'v4'] as const) {
      const latency = await cancelLatency(server, root, api, 10);
      process.stdout.write(`[${api}] cancel of a job that prints nothing, seen by the runner (cancel → script stopped), 10 jobs: p50 ${fmt(percentile(latency, 50))}, p95 ${fmt(percentile(latency, 95))}\n`);
    }
    await printIdle(server, root);
  } finally {
    await server.close();
    await rm(root, { recursive: true, force: true });
    await rm(repo, { recursive: true, force: true });
  }
}

/**
 * Cancels `n` jobs that print nothing (`sleep`), each at a random moment within a second after its
 * script started (so the cancel falls anywhere between two of the runner's keep-alives), and times
 * the server's cancel to the end of the script the runner then stops. Sorted, in ms.
 */
async function cancelLatency(server: ReferenceServer, root: string, api: Api, n: number): Promise<number[]> {
  const token = await register(server);
  const config = configSchema.parse({
    concurrent: 1,
    check_interval: 0.2,
    runners: [{ name: 'bench-cancel', url: server.url, token, api, builds_dir: join(root, `builds-cancel-${api}`), cache_dir: join(root, 'cache') }],
  });
  const services = defaultServices(silentLogger());
  let started: (() => void) | undefined;
  let stopped: (() => void) | undefined;
  const agent = new Agent(config, {
    ...services,
    createExecutor: async (runner) => {
      const inner = await services.createExecutor(runner);
      const runChained = inner.runChained?.bind(inner);
      const timed: Executor = {
        ...passThrough(inner),
        runStage: async (request) => {
          if (request.stage === SCRIPT_STAGE) started?.();
          const result = await inner.runStage(request);
          if (request.stage === SCRIPT_STAGE) stopped?.();
          return result;
        },
        ...(runChained
          ? {
              runChained: async (chain) => {
                const result = await runChained({ ...chain, began: (at) => (chain.began(at), started?.()) });
                if (result.second) stopped?.();
                return result;
              },
            }
          : {}),
      };
      return timed;
    },
  });
  agent.start();
  const latencies: number[] = [];
  try {
    for (let i = 0; i < n; i += 1) {
      const running = new Promise<void>((resolve) => (started = resolve));
      const ended = new Promise<void>((resolve) => (stopped = resolve));
      const pipeline = await server.createPipeline({ project: 'bench/project', config: 'silent:\n  variables:\n    GIT_STRATEGY: none\n  script:\n    - sleep 60\n' });
      await running;
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 1000));
      const t0 = performance.now();
      server.cancelJob(pipeline.jobs[0]!.id);
      await ended;
      latencies.push(performance.now() - t0);
      for (;;) {
        const status = server.getPipeline(pipeline.id)?.status;
        if (status && ['success', 'failed', 'canceled'].includes(status)) break;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    }
  } finally {
    agent.shutdown();
    agent.shutdown();
    await agent.done();
  }
  return latencies.sort((a, b) => a - b);
}
