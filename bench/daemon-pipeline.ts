/**
 * A pipeline of trivial jobs as the rig ran GitLab Runner's: the daemon as it ships (`ci-runner run`
 * from `dist`, with its V8 flags) in a process of its own, against the reference server in another
 * (server-process.ts), so neither shares the other's event loop. The wall is the server's: from the
 * first job's pickup (`started_at`) to the last final update (`finished_at`); the daemon's CPU is read
 * from /proc over the same span (10 ms ticks). Used by agent.ts; no `run` of its own.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DAEMON_NODE_FLAGS } from '../src/util/node-flags.js';
import { serverProcess, type ServerProcess } from './server-process.js';
import { register } from './support.js';

const CLI = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));

interface JobTimes {
  started_at: string | null;
  finished_at: string | null;
}

interface PipelineJobs {
  status: string;
  jobs: Array<{ id: number; status: string }>;
}

export interface DaemonPipeline {
  /** First pickup to last final update, by the server's clock, in ms. */
  wallMs: number;
  /** The daemon's CPU over about that span, in ms. */
  cpuMs: number;
  /** The server's CPU over the same span, in ms. */
  serverCpuMs: number;
  status: string;
}

async function cpuTicks(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

/** Runs `jobs` trivial jobs at `concurrent` on a fresh server and daemon; both are gone afterwards. */
export async function daemonPipeline(root: string, jobs: number, concurrent: number, api: 'v1' | 'v4'): Promise<DaemonPipeline> {
  const server = await serverProcess();
  try {
    const token = await register(server);
    const config = join(root, `daemon-${api}-${concurrent}.toml`);
    await writeFile(
      config,
      `concurrent = ${concurrent}\ncheck_interval = 3\nlog_level = "warn"\n` +
        `[[runners]]\n  name = "bench"\n  url = "${server.url}"\n  token = "${token}"\n  api = "${api}"\n  builds_dir = "${join(root, `daemon-builds-${api}`)}"\n  cache_dir = "${join(root, 'daemon-cache')}"\n`,
      { mode: 0o600 },
    );
    const child = spawn(process.execPath, [...DAEMON_NODE_FLAGS, CLI, 'run', '-c', config], { stdio: ['ignore', 'ignore', 'inherit'] });
    const pid = child.pid ?? 0;
    try {
      // A warm daemon, as a runner in service is: its first jobs load the job modules and run cold
      // code. Without a checkout, so the measured jobs clone first, as the in-process figure's do.
      await pipelineOf(server, pid, concurrent * 2, 'variables:\n  GIT_STRATEGY: none\n');
      return await pipelineOf(server, pid, jobs);
    } finally {
      child.kill('SIGTERM');
      if (child.exitCode === null) await once(child, 'exit');
    }
  } finally {
    await server.close();
  }
}

/** Queues `jobs` trivial jobs and waits for their end; the figures of DaemonPipeline. */
async function pipelineOf(server: ServerProcess, pid: number, jobs: number, head = ''): Promise<DaemonPipeline> {
  const yaml = head + Array.from({ length: jobs }, (_, i) => `job${i}:\n  script:\n    - "true"\n`).join('');
  const pipeline = await server.admin<{ id: number }>('/pipelines', { method: 'POST', body: { project: 'bench/project', config: yaml } });
  let ticks0: [number, number] | undefined;
  let last: PipelineJobs;
  for (;;) {
    last = await server.admin<PipelineJobs>(`/pipelines/${pipeline.id}`);
    if (ticks0 === undefined && last.jobs.some((job) => job.status !== 'pending' && job.status !== 'created')) ticks0 = [await cpuTicks(pid), await cpuTicks(server.pid)];
    if (['success', 'failed', 'canceled'].includes(last.status)) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const cpuMs = ((await cpuTicks(pid)) - (ticks0?.[0] ?? 0)) * 10;
  const serverCpuMs = ((await cpuTicks(server.pid)) - (ticks0?.[1] ?? 0)) * 10;
  const jobViews = await Promise.all(last.jobs.map((job) => server.admin<JobTimes>(`/jobs/${job.id}`)));
  const times = (key: keyof JobTimes): number[] => jobViews.map((job) => Date.parse(job[key] ?? '')).filter(Number.isFinite);
  return { wallMs: Math.max(...times('finished_at')) - Math.min(...times('started_at')), cpuMs, serverCpuMs, status: last.status };
}
