/**
 * One job of the reference server run by an in-process runner over /api/v4 with the shell executor:
 * the pipeline queued from `yaml`, `runOnce`, then the job's status and trace as the server has them.
 */
import { runnerSchema } from '../../src/agent/config/schema.js';
import { defaultServices } from '../../src/agent/services.js';
import { silentLogger } from '../../src/log/index.js';
import type { JobView } from '../../src/server/types.js';
import { workDirs } from '../cli/helpers.js';
import { runOnce } from './run-once.js';
import type { TestServer } from './server.js';

export type Dirs = Awaited<ReturnType<typeof workDirs>>;

export interface V4JobRun {
  d: Dirs;
  job: JobView;
  status: string;
  trace: string;
}

/** Runs the first job of `yaml` in `options.d` (a fresh builds dir when absent); `runner` adds config keys. */
export async function runV4Job(t: TestServer, token: string, yaml: string, options: { d?: Dirs; runner?: Record<string, unknown> } = {}): Promise<V4JobRun> {
  const d = options.d ?? (await workDirs());
  const p = await t.pipeline(yaml);
  const runner = runnerSchema.parse({ name: 'v4-job', url: t.url, token, api: 'v4', builds_dir: d.builds, cache_dir: d.cache, trace_update_interval: 0.2, ...options.runner });
  const never = new AbortController().signal;
  await runOnce({ runner, services: defaultServices(silentLogger()), waitTimeoutMs: 20_000, pollIntervalMs: 200, stopWaiting: never, stopJob: never });
  const id = p.jobs[0]!.id;
  const job = await t.waitForJob(id, (j) => j.status === 'success' || j.status === 'failed');
  return { d, job, status: job.status, trace: (await t.server.getTrace(id)).toString('utf8') };
}

/** A one-job pipeline: `variables` and `script` lines. */
export function jobYaml(variables: Record<string, string>, script: readonly string[]): string {
  const vars = Object.entries(variables).map(([key, value]) => `    ${key}: ${JSON.stringify(value)}\n`).join('');
  return `j:\n${vars ? `  variables:\n${vars}` : ''}  script:\n${script.map((line) => `    - ${JSON.stringify(line)}\n`).join('')}`;
}
