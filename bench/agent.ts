/**
 * Agent benchmark: per-job overhead of a trivial job (pickup → final state accepted, minus
 * the script's own time), p50/p95 over 50 jobs; wall time of 20 trivial jobs with concurrent = 2; then
 * the idle figures of bench/idle.ts (`run` settled, after a job, after reloads, next to a bare node).
 * The reference server runs in this process (so it shares the CPU with the agent); the idle daemon is
 * a separate process. Figures are printed, not asserted.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent } from '../src/agent/agent.js';
import { configSchema } from '../src/agent/config/schema.js';
import { defaultServices } from '../src/agent/services.js';
import type { Executor } from '../src/executors/types.js';
import { silentLogger } from '../src/log/index.js';
import { createReferenceServer, type ReferenceServer } from '../src/server/index.js';
import { createGitRepo } from '../test/helpers/git.js';
import { printIdle } from './idle.js';
import { percentile, register, runToEnd } from './support.js';

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
  const wall = await runToEnd(agent, server, pipeline.id);
  const stages = [...stageMs].map(([name, list]) => `${name} p50 ${percentile(list.sort((a, b) => a - b), 50).toFixed(0)} ms`).join(', ');
  return { wall, stages, overhead: overhead.sort((a, b) => a - b), scripts: [...scriptMs.values()].sort((a, b) => a - b) };
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
    await printIdle(server, root);
  } finally {
    await server.close();
    await rm(root, { recursive: true, force: true });
    await rm(repo, { recursive: true, force: true });
  }
}
