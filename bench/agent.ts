/**
 * Agent benchmark (issue #4): per-job overhead of a trivial job (pickup → final state accepted, minus
 * the script's own time), p50/p95 over 50 jobs; wall time of 20 trivial jobs with concurrent = 2; idle
 * RSS and CPU of `ci-runner run` over ~10 s. The reference server runs in this process (so it shares
 * the CPU with the agent); the idle daemon is a separate process. Figures are printed, not asserted.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { Agent } from '../src/agent/agent.js';
import { configSchema } from '../src/agent/config/schema.js';
import { defaultServices } from '../src/agent/services.js';
import type { Executor } from '../src/executors/types.js';
import { silentLogger } from '../src/log.js';
import { createReferenceServer, type ReferenceServer } from '../src/server/index.js';
import { createGitRepo } from '../test/helpers/git.js';
import { percentile, register } from './support.js';

const CLI = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));

function jobs(n: number, gitStrategy?: string): string {
  const vars = gitStrategy ? `variables:\n  GIT_STRATEGY: ${gitStrategy}\n` : '';
  return vars + Array.from({ length: n }, (_, i) => `job${i}:\n  script:\n    - "true"\n`).join('');
}

async function runPipeline(server: ReferenceServer, root: string, n: number, concurrent: number, gitStrategy?: string) {
  const token = await register(server);
  const config = configSchema.parse({
    concurrent,
    check_interval: 3,
    runners: [{ name: 'bench', url: server.url, token, builds_dir: join(root, `builds-${concurrent}-${gitStrategy ?? 'default'}`), cache_dir: join(root, 'cache') }],
  });
  const logger = silentLogger();
  const services = defaultServices(logger);
  const scriptMs = new Map<number, number>();
  const picked = new Map<number, number>();
  const overhead: number[] = [];
  const stageMs = new Map<string, number[]>();
  const agent = new Agent(
    config,
    {
      ...services,
      createExecutor: async (runner) => {
        const inner = await services.createExecutor(runner);
        const timed: Executor = {
          name: inner.name,
          cleanup: () => inner.cleanup(),
          runStage: async (request) => {
            const t0 = performance.now();
            const result = await inner.runStage(request);
            stageMs.set(request.stage, [...(stageMs.get(request.stage) ?? []), performance.now() - t0]);
            if (request.stage === 'build_script') {
              const id = Number(request.variables.find((v) => v.key === 'CI_JOB_ID')?.value);
              scriptMs.set(id, performance.now() - t0);
            }
            return result;
          },
        };
        return timed;
      },
    },
    {
      jobStarted: (_r, build) => picked.set(build.id, performance.now()),
      jobFinished: (_r, build, outcome) => {
        if (outcome.state !== 'success') process.stdout.write(`  job ${build.id} ${outcome.state}: ${outcome.reason ?? ''}\n`);
        overhead.push(performance.now() - (picked.get(build.id) ?? 0) - (scriptMs.get(build.id) ?? 0));
      },
    },
  );
  const pipeline = await server.createPipeline({ project: 'bench/project', config: jobs(n, gitStrategy) });
  const t0 = performance.now();
  agent.start();
  for (;;) {
    const view = server.getPipeline(pipeline.id);
    if (view && ['success', 'failed', 'canceled'].includes(view.status)) break;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  const wall = performance.now() - t0;
  agent.shutdown();
  await agent.done();
  const stages = [...stageMs].map(([name, list]) => `${name} p50 ${percentile(list.sort((a, b) => a - b), 50).toFixed(0)} ms`).join(', ');
  return { wall, stages, overhead: overhead.sort((a, b) => a - b), scripts: [...scriptMs.values()].sort((a, b) => a - b) };
}

async function cpuTicks(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

async function rssMb(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
}

/** A free port on 127.0.0.1 (for the idle daemon's status server). */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** Idle RSS and CPU of `run`; with `listen`, its status server is on and scraped once a second. */
export async function idle(server: ReferenceServer, root: string, listen = false): Promise<{ rss: number; cpuPct: number; seconds: number }> {
  const token = await register(server);
  const config = join(root, 'idle.toml');
  const port = listen ? await freePort() : 0;
  const scrape = async (): Promise<void> => {
    if (listen) await fetch(`http://127.0.0.1:${port}/metrics`).then((r) => r.text()).catch(() => undefined);
  };
  await writeFile(config, `concurrent = 1\ncheck_interval = 3\nlog_level = "warn"\nlog_format = "json"\n${listen ? `listen_address = "127.0.0.1:${port}"\n` : ''}[[runners]]\n  name = "idle"\n  url = "${server.url}"\n  token = "${token}"\n  builds_dir = "${join(root, 'idle-builds')}"\n`);
  const child = execa('node', [CLI, 'run', '-c', config], { reject: false, stdin: 'ignore' });
  const pid = child.pid ?? 0;
  // Past start-up: module compilation, JIT and the first GCs cost ~0.1 s of CPU in the first
  // ~15 s (the first polls run cold code); the steady state is what an idle daemon costs.
  await new Promise((resolve) => setTimeout(resolve, 15_000));
  await scrape();
  const seconds = 10;
  const before = await cpuTicks(pid);
  const t0 = performance.now();
  let rss = 0;
  for (let i = 0; i < seconds; i += 1) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    await scrape();
    rss = Math.max(rss, await rssMb(pid));
  }
  const ticks = (await cpuTicks(pid)) - before;
  const elapsed = (performance.now() - t0) / 1000;
  child.kill('SIGTERM');
  await child;
  return { rss, cpuPct: (ticks / 100 / elapsed) * 100, seconds: elapsed };
}

export async function run(): Promise<void> {
  const root = await mkdtemp(join(tmpdir(), 'ci-runner-bench-agent-'));
  const repo = await createGitRepo({ 'README.md': '# bench\n' });
  const server = await createReferenceServer({ projects: [{ name: 'bench/project', path: repo }], logger: silentLogger() });
  try {
    const single = await runPipeline(server, root, 50, 1);
    const fmt = (ms: number) => `${ms.toFixed(0)} ms`;
    process.stdout.write(
      `per-job overhead, 50 trivial jobs, concurrent=1: p50 ${fmt(percentile(single.overhead, 50))}, p95 ${fmt(percentile(single.overhead, 95))}` +
        ` (script itself: p50 ${fmt(percentile(single.scripts, 50))}; whole pipeline ${(single.wall / 1000).toFixed(2)} s)\n  stages: ${single.stages}\n`,
    );
    const noGit = await runPipeline(server, root, 50, 1, 'none');
    process.stdout.write(
      `per-job overhead without git (GIT_STRATEGY none), 50 jobs: p50 ${fmt(percentile(noGit.overhead, 50))}, p95 ${fmt(percentile(noGit.overhead, 95))}\n`,
    );
    const pair = await runPipeline(server, root, 20, 2);
    process.stdout.write(`20 trivial jobs, concurrent=2: wall ${(pair.wall / 1000).toFixed(2)} s\n`);
    const quiet = await idle(server, root);
    process.stdout.write(`idle \`run\` (1 runner, check_interval 3 s) over ${quiet.seconds.toFixed(1)} s: RSS ${quiet.rss.toFixed(1)} MB, CPU ${quiet.cpuPct.toFixed(2)} %\n`);
    const watched = await idle(server, root, true);
    process.stdout.write(`idle \`run\` with listen_address, /metrics scraped every second, over ${watched.seconds.toFixed(1)} s: RSS ${watched.rss.toFixed(1)} MB, CPU ${watched.cpuPct.toFixed(2)} %\n`);
  } finally {
    await server.close();
    await rm(root, { recursive: true, force: true });
    await rm(repo, { recursive: true, force: true });
  }
}
