import { logText } from '../helpers/log-text.js';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runnerSchema } from '../../src/agent/config/schema.js';
import { defaultServices, type SharedServices } from '../../src/agent/services.js';
import type { Executor } from '../../src/executors/types.js';
import { silentLogger } from '../../src/log/index.js';
import { runOnce } from '../helpers/run-once.js';
import { useTestServer, type TestServer } from '../helpers/server.js';
import { workDirs } from '../cli/helpers.js';

let t: TestServer;
let token: string;
useTestServer(
  (server, runnerToken) => {
    t = server;
    token = runnerToken;
  },
  { files: { 'README.md': '# p\n' } },
);

/** The real services, with each stage start the executor is asked for logged in `calls`. */
function counted(calls: string[]): SharedServices {
  const base = defaultServices(silentLogger());
  return {
    ...base,
    createExecutor: async (runner) => {
      const inner = await base.createExecutor(runner);
      const runChained = inner.runChained?.bind(inner);
      const wrapped: Executor = {
        name: inner.name,
        runStage: (request) => {
          calls.push(request.stage);
          return inner.runStage(request);
        },
        ...(runChained
          ? {
              runChained: (chain) => {
                calls.push(`${chain.first.stage}+${chain.second.stage}`);
                return runChained(chain);
              },
            }
          : {}),
        cleanup: () => inner.cleanup(),
        ...(inner.settled ? { settled: inner.settled.bind(inner) } : {}),
      };
      return wrapped;
    },
  };
}

/** Queues `yaml`, runs its one job; the job's status, trace and the stage starts. */
async function runJob(yaml: string, runner: Record<string, unknown> = {}) {
  const d = await workDirs();
  const p = await t.pipeline(yaml);
  const config = runnerSchema.parse({ name: 'chain', url: t.url, token, builds_dir: d.builds, cache_dir: d.cache, trace_update_interval: 0.2, ...runner });
  const never = new AbortController().signal;
  const calls: string[] = [];
  await runOnce({ runner: config, services: counted(calls), waitTimeoutMs: 20_000, pollIntervalMs: 200, stopWaiting: never, stopJob: never });
  const id = p.jobs[0]!.id;
  return { status: t.server.getJob(id)?.status, trace: logText(await t.server.getTrace(id)), calls };
}

describe('get_sources and step_script in one process', () => {
  it('runs the build in the process get_sources ran in when nothing is to be done between them, and the trace reads as before', async () => {
    const { status, trace, calls } = await runJob('j:\n  script:\n    - echo built\n  after_script:\n    - echo after\n');
    expect(status, trace).toBe('success');
    expect(calls).toEqual(['get_sources+step_script', 'after_script']);
    const checkout = trace.indexOf('Checking out');
    const executing = trace.indexOf('Executing "step_script" stage of the job script');
    const command = trace.indexOf('$ echo built');
    expect(checkout, trace).toBeGreaterThan(0);
    expect(executing).toBeGreaterThan(checkout);
    expect(command).toBeGreaterThan(executing);
    expect(trace.split('Executing "step_script" stage of the job script')).toHaveLength(2);
    expect(trace).toContain('after');
  });

  for (const shell of ['bash', 'sh'] as const) {
    it(`keeps the stages apart under ${shell}: get_sources' exports, cd and fd 3 do not reach the build, which is the process the runner started and stops at its first failing command`, async () => {
      // The pre-clone script runs in get_sources: what it leaves must not reach the build.
      const preClone = 'export LEAKED=from-sources; cd /; test ! -e /proc/self/fd/3';
      const script = [
        'test -z "${LEAKED:-}"',
        'test "$PWD" = "$CI_PROJECT_DIR"',
        // The build stage is the shell the runner started (running the build's script), not a subshell.
        'grep -q step_script /proc/$$/cmdline',
        'test ! -e /proc/self/fd/3',
        'echo separate',
        'false',
        'echo not reached',
      ];
      const yaml = `j:\n  script:\n${script.map((line) => `    - ${JSON.stringify(line)}\n`).join('')}`;
      const { status, trace, calls } = await runJob(yaml, { shell, pre_clone_script: preClone });
      expect(calls).toEqual(['get_sources+step_script']);
      expect(status, trace).toBe('failed');
      expect(trace).toContain('separate');
      expect(trace).toContain('ERROR: Job failed: exit status 1');
      expect(trace).not.toContain('$ echo not reached');
    });
  }

  it('fails the job with get_sources\' status and never starts the build or after_script when get_sources fails', async () => {
    const { status, trace, calls } = await runJob('j:\n  script:\n    - echo never\n  after_script:\n    - echo never after\n', { pre_clone_script: 'exit 7' });
    expect(calls).toEqual(['get_sources+step_script']);
    expect(status).toBe('failed');
    expect(trace).toContain('ERROR: Job failed: getting sources failed: exit status 7');
    expect(trace).not.toContain('Executing "step_script" stage of the job script');
    expect(trace).not.toContain('never');
  });

  it('retries a failed get_sources in a process of its own and then runs the build alone', async () => {
    const mark = join(await mkdtemp(join(tmpdir(), 'ci-runner-chain-')), 'tried');
    const preClone = `if [ ! -e '${mark}' ]; then : > '${mark}'; exit 7; fi`;
    const { status, trace, calls } = await runJob('j:\n  variables:\n    GET_SOURCES_ATTEMPTS: "2"\n  script:\n    - echo built\n', { pre_clone_script: preClone });
    expect(status, trace).toBe('success');
    expect(calls).toEqual(['get_sources+step_script', 'get_sources', 'step_script']);
    expect(trace).toContain('Getting sources failed (attempt 1 of 2); retrying...');
    expect(trace.split('Executing "step_script" stage of the job script')).toHaveLength(2);
    expect(trace.split('$ echo built')).toHaveLength(2);
  });

  it('keeps the stages apart when a cache is to be restored between them', async () => {
    const { status, trace, calls } = await runJob('j:\n  cache:\n    key: k\n    paths: [out]\n  script:\n    - mkdir -p out\n');
    expect(status, trace).toBe('success');
    expect(calls).toEqual(['get_sources', 'step_script']);
  });
});
