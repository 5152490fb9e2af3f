/**
 * A burst of output: a shell job prints 22.9 MB at once (the issue-24 rig's figure; GitLab Runner 1.11
 * took 2.3–3.3 s there), timed from pickup to the final update accepted, over v1 and v4, 5 jobs each;
 * beside it the floor, the same bytes through one HTTP PUT to a bare `node:http` server on loopback,
 * and the script alone (the same command into /dev/null); then the p50 of each step of the job's timeline
 * (--debug) over 3 more jobs per API. output_limit is raised so every byte is sent.
 * The reference server runs in a process of its own (server-process.ts), as the coordinator GitLab Runner
 * was measured against did. Figures are printed, not asserted.
 */
import { createServer } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { Agent } from '../src/agent/agent.js';
import { configSchema } from '../src/agent/config/schema.js';
import { defaultServices } from '../src/agent/services.js';
import { silentLogger, type Logger } from '../src/log/index.js';
import { serverProcess, type ServerProcess } from './server-process.js';
import { percentile, pickupTimer, register, runToEnd, stepMedians, timelineLogger } from './support.js';

const BYTES = 22_900_000;
const PEER_S = [2.3, 3.3];
/** 100-byte lines, as a build's output is lines; `yes` ends by SIGPIPE, which pipefail would report. */
const PRINT = `(yes '${'x'.repeat(99)}' || true) | head -c ${BYTES}`;

interface PipelineView {
  status: string;
  jobs: { id: number }[];
}

async function burstJobs(server: ServerProcess, root: string, api: 'v1' | 'v4', n: number, logger: Logger = silentLogger()): Promise<number[]> {
  const token = await register(server);
  const config = configSchema.parse({
    concurrent: 1,
    check_interval: 3,
    runners: [{ name: 'bench-burst', url: server.url, token, api, output_limit: 65_536, builds_dir: join(root, `builds-${api}`), cache_dir: join(root, 'cache') }],
  });
  const done: number[] = [];
  const agent = new Agent(config, defaultServices(logger), pickupTimer((_id, ms) => done.push(ms)));
  const yaml = Array.from({ length: n }, (_, i) => `burst${i}:\n  variables:\n    GIT_STRATEGY: none\n  script:\n    - ${JSON.stringify(PRINT)}\n`).join('');
  const pipeline = await server.admin<PipelineView & { id: number }>('/pipelines', { method: 'POST', body: { project: 'bench/project', config: yaml } });
  const view = async (): Promise<PipelineView> => server.admin<PipelineView>(`/pipelines/${pipeline.id}`);
  await runToEnd(agent, async () => (await view()).status, 50);
  for (const job of (await view()).jobs) {
    const size = (await server.trace(job.id)).length;
    if (size < BYTES) process.stdout.write(`  job ${job.id}: the server has ${size} bytes, fewer than printed\n`);
  }
  return done.sort((a, b) => a - b);
}

/** The same bytes as one PUT to a server that only counts them: what loopback HTTP costs. */
async function loopbackFloor(runs: number): Promise<number[]> {
  const body = Buffer.alloc(BYTES, 'x');
  const sink = createServer((request, response) => {
    request.on('data', () => undefined);
    request.on('end', () => response.end('ok'));
  });
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
  const address = sink.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const times: number[] = [];
  try {
    for (let i = 0; i < runs; i += 1) {
      const t0 = performance.now();
      const answer = await fetch(`http://127.0.0.1:${port}/`, { method: 'PUT', body });
      await answer.text();
      times.push(performance.now() - t0);
    }
  } finally {
    sink.close();
  }
  return times.sort((a, b) => a - b);
}

async function scriptAlone(runs: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < runs; i += 1) {
    const t0 = performance.now();
    await execa('bash', ['-c', `${PRINT} > /dev/null`]);
    times.push(performance.now() - t0);
  }
  return times.sort((a, b) => a - b);
}

export async function run(): Promise<void> {
  const root = await mkdtemp(join(tmpdir(), 'ci-runner-bench-burst-'));
  const server = await serverProcess();
  const fmt = (ms: number): string => `${ms.toFixed(0)} ms`;
  try {
    const floor = percentile(await loopbackFloor(5), 50);
    const script = percentile(await scriptAlone(5), 50);
    process.stdout.write(`floor: ${(BYTES / 1e6).toFixed(1)} MB in one PUT on loopback p50 ${fmt(floor)}; the script alone (into /dev/null) p50 ${fmt(script)}\n`);
    for (const api of ['v1', 'v4'] as const) {
      const times = await burstJobs(server, root, api, 5);
      const p50 = percentile(times, 50);
      const ratio = (peer: number): string => (p50 / 1000 / peer).toFixed(2);
      process.stdout.write(
        `[${api}] ${(BYTES / 1e6).toFixed(1)} MB printed at once, pickup → final update accepted, 5 jobs: p50 ${fmt(p50)}, max ${fmt(times.at(-1) ?? NaN)}` +
          ` (GitLab Runner 1.11: ${PEER_S[0]}–${PEER_S[1]} s, so ${ratio(PEER_S[1] ?? 1)}–${ratio(PEER_S[0] ?? 1)}×; aim ≤ 0.15×)\n`,
      );
    }
    for (const api of ['v1', 'v4'] as const) {
      const steps = new Map<string, number[]>();
      await burstJobs(server, root, api, 3, timelineLogger(steps));
      process.stdout.write(`[${api}] timeline of 3 such jobs (--debug), p50 ms per step:\n  ${stepMedians(steps)}\n`);
    }
  } finally {
    await server.close();
    await rm(root, { recursive: true, force: true });
  }
}
