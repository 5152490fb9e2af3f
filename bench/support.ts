/** Shared by the benchmarks (no `run` export, so `bench/run.ts` does not run it as one). */
import { Writable } from 'node:stream';
import { RunnerApiClient } from '../src/client/runner-api.js';
import type { TlsMaterial } from '../src/client/tls.js';
import type { Agent, AgentEvents } from '../src/agent/agent.js';
import { createLogger, type Logger } from '../src/log/index.js';
import type { ReferenceServer } from '../src/server/index.js';

/** The `p`th percentile of ascending `sorted`. */
export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}

/** Registers a runner on `server`; its token. */
export async function register(server: Pick<ReferenceServer, 'url' | 'registrationToken'>, tls?: TlsMaterial): Promise<string> {
  const client = new RunnerApiClient({ url: server.url, ...(tls ? { tls } : {}) });
  const result = await client.registerRunner({ token: server.registrationToken, description: 'bench', runUntagged: true });
  await client.close();
  if (!result.runner) throw new Error(`registration failed: ${result.status}`);
  return result.runner.token;
}

/**
 * Starts `agent`, waits until `pipelineStatus` (read every `pollMs`) says the pipeline has ended, stops
 * the agent; the wall time in ms.
 */
export async function runToEnd(agent: Agent, pipelineStatus: () => string | undefined | Promise<string | undefined>, pollMs = 10): Promise<number> {
  const t0 = performance.now();
  agent.start();
  for (;;) {
    const status = await pipelineStatus();
    if (status && ['success', 'failed', 'canceled'].includes(status)) break;
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
  const wall = performance.now() - t0;
  agent.shutdown();
  await agent.done();
  return wall;
}

/**
 * Agent events that time each job from pickup to its end, say when one did not succeed, and hand
 * `ended` the job's id and milliseconds.
 */
export function pickupTimer(ended: (buildId: number, ms: number) => void): AgentEvents {
  const picked = new Map<number, number>();
  return {
    jobStarted: (_runner, build) => picked.set(build.id, performance.now()),
    jobFinished: (_runner, build, outcome) => {
      if (outcome.state !== 'success') process.stdout.write(`  job ${build.id} ${outcome.state}: ${outcome.reason ?? ''}\n`);
      ended(build.id, performance.now() - (picked.get(build.id) ?? 0));
    },
  };
}

/** A debug logger whose `timeline` records land in `steps` (step → took_ms list). */
export function timelineLogger(steps: Map<string, number[]>): Logger {
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (!line.includes('"timeline"')) continue;
        const record = JSON.parse(line) as { msg?: string; step?: string; took_ms?: number };
        if (record.msg === 'timeline' && record.step) steps.set(record.step, [...(steps.get(record.step) ?? []), record.took_ms ?? 0]);
      }
      done();
    },
  });
  return createLogger({ level: 'debug', format: 'json', destination });
}

/** `step p50, …` of what timelineLogger gathered, in the order the steps first ended. */
export function stepMedians(steps: Map<string, number[]>): string {
  return [...steps].map(([step, list]) => `${step} ${percentile([...list].sort((a, b) => a - b), 50).toFixed(1)}`).join(', ');
}
