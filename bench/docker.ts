/**
 * Docker executor benchmark: per-job time of a trivial job in a small image (pickup → final
 * state accepted; the script `true` itself takes ~nothing), p50/p95 over 20 jobs, next to the floor
 * measured in the same run (`docker run --rm IMAGE true`, median of 10); with git (fetch into the slot)
 * and without (GIT_STRATEGY none); the p50 of each step of the job's timeline (--debug) over 10 jobs with
 * git; then the wall of 20 trivial jobs at concurrent = 4. The reference
 * server runs in this process. Needs a docker engine; builds the test images if missing.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { Agent } from '../src/agent/agent.js';
import { configSchema } from '../src/agent/config/schema.js';
import { defaultServices } from '../src/agent/services.js';
import { silentLogger, type Logger } from '../src/log/index.js';
import { createReferenceServer, type ReferenceServer } from '../src/server/index.js';
import { createGitRepo } from '../test/helpers/git.js';
import { percentile, pickupTimer, register, runToEnd, stepMedians, timelineLogger } from './support.js';

const IMAGE = 'ci-runner-test/sh:1';
const IMAGES_SCRIPT = fileURLToPath(new URL('../.ci/docker-test-images.sh', import.meta.url));

async function floor(runs: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < runs; i += 1) {
    const t0 = performance.now();
    await execa('docker', ['run', '--rm', IMAGE, 'true']);
    times.push(performance.now() - t0);
  }
  return times.sort((a, b) => a - b);
}

async function runPipeline(server: ReferenceServer, root: string, n: number, concurrent: number, gitStrategy?: string, logger: Logger = silentLogger()) {
  const token = await register(server);
  const config = configSchema.parse({
    concurrent,
    check_interval: 3,
    runners: [{
      name: 'bench-docker', url: server.url, token, executor: 'docker',
      builds_dir: join(root, `builds-${concurrent}-${gitStrategy ?? 'default'}`), cache_dir: join(root, 'cache'),
      docker: { image: IMAGE, pull_policy: ['if-not-present'] },
    }],
  });
  const perJob: number[] = [];
  const agent = new Agent(config, defaultServices(logger), pickupTimer((_id, ms) => perJob.push(ms)));
  const vars = gitStrategy ? `variables:\n  GIT_STRATEGY: ${gitStrategy}\n` : '';
  const yaml = vars + Array.from({ length: n }, (_, i) => `job${i}:\n  script:\n    - "true"\n`).join('');
  const pipeline = await server.createPipeline({ project: 'bench/project', config: yaml });
  const wall = await runToEnd(agent, () => server.getPipeline(pipeline.id)?.status);
  return { wall, perJob: perJob.sort((a, b) => a - b) };
}

export async function run(): Promise<void> {
  try {
    await execa('docker', ['version', '--format', '{{.Server.Version}}'], { timeout: 20_000 });
    await execa(IMAGES_SCRIPT);
  } catch (error) {
    process.stdout.write(`skipped: no docker engine or test images (${(error as Error).message.split('\n')[0]})\n`);
    return;
  }
  const root = await mkdtemp(join(tmpdir(), 'ci-runner-bench-docker-'));
  const repo = await createGitRepo({ 'README.md': '# bench\n' });
  const server = await createReferenceServer({ projects: [{ name: 'bench/project', path: repo }], logger: silentLogger() });
  const fmt = (ms: number): string => `${ms.toFixed(0)} ms`;
  try {
    await floor(2); // warm the engine and the image's layers
    const before = await floor(10);
    const withGit = await runPipeline(server, root, 20, 1);
    const noGit = await runPipeline(server, root, 20, 1, 'none');
    const after = await floor(10);
    const floorMs = percentile([...before, ...after].sort((a, b) => a - b), 50);
    process.stdout.write(`floor \`docker run --rm ${IMAGE} true\`: p50 ${fmt(floorMs)} (20 runs around the jobs)\n`);
    for (const [label, r] of [['with git fetch', withGit], ['GIT_STRATEGY none', noGit]] as const) {
      const p50 = percentile(r.perJob, 50);
      process.stdout.write(`per-job, 20 trivial jobs, concurrent=1, ${label}: p50 ${fmt(p50)}, p95 ${fmt(percentile(r.perJob, 95))}; p50 minus floor ${fmt(p50 - floorMs)}\n`);
    }
    const steps = new Map<string, number[]>();
    await runPipeline(server, root, 10, 1, undefined, timelineLogger(steps));
    process.stdout.write(`timeline of 10 trivial jobs with git (--debug), p50 ms per step:\n  ${stepMedians(steps)}\n`);
    const four = await runPipeline(server, root, 20, 4);
    process.stdout.write(`20 trivial jobs, concurrent=4: wall ${(four.wall / 1000).toFixed(2)} s (per job p50 ${fmt(percentile(four.perJob, 50))})\n`);
  } finally {
    await server.close();
    await rm(root, { recursive: true, force: true });
    await rm(repo, { recursive: true, force: true });
  }
}
