import { readdir, readFile, stat, utimes } from 'node:fs/promises';
import { dirname } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunnerApiClient } from '../../src/client/runner-api.js';
import { pruneKeptLogs } from '../../src/agent/job/kept-logs.js';
import { recoverDeliveries } from '../../src/agent/recover.js';
import { runnerSchema } from '../../src/agent/config/schema.js';
import { runOnce } from '../helpers/run-once.js';
import { defaultServices } from '../../src/agent/services.js';
import { silentLogger } from '../../src/log/index.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { workDirs } from '../cli/helpers.js';
import type { Executor } from '../../src/executors/types.js';

let t: TestServer;
let token: string;
beforeAll(async () => {
  t = await startTestServer({ files: { 'README.md': '# p\n', 'src/a.txt': 'a\n' } });
  ({ token } = await t.registerRunner());
});
afterAll(async () => {
  await t.close();
});

/** Queues `yaml`, runs one job in-process, returns the job's final status and trace. */
async function runJob(yaml: string, runner: Record<string, unknown> = {}) {
  const d = await workDirs();
  const p = await t.pipeline(yaml);
  const config = runnerSchema.parse({ name: 'job-test', url: t.url, token, builds_dir: d.builds, cache_dir: d.cache, trace_update_interval: 0.2, ...runner });
  const never = new AbortController().signal;
  const result = await runOnce({ runner: config, services: defaultServices(silentLogger()), waitTimeoutMs: 20_000, pollIntervalMs: 200, stopWaiting: never, stopJob: never });
  const id = p.jobs[0]!.id;
  return { result, status: t.server.getJob(id)?.status, trace: (await t.server.getTrace(id)).toString('utf8') };
}

/** Queues `yaml` and runs its one job in-process with the real executor as `wrap` changes it. */
async function runWrapped(yaml: string, wrap: (inner: Executor, builds: string) => Executor) {
  const d = await workDirs();
  const p = await t.pipeline(yaml);
  const config = runnerSchema.parse({ name: 'job-test', url: t.url, token, builds_dir: d.builds, cache_dir: d.cache });
  const services = defaultServices(silentLogger());
  const never = new AbortController().signal;
  const result = await runOnce({
    runner: config,
    services: { ...services, createExecutor: async (runner) => wrap(await services.createExecutor(runner), d.builds) },
    waitTimeoutMs: 20_000,
    pollIntervalMs: 200,
    stopWaiting: never,
    stopJob: never,
  });
  return { result, jobId: p.jobs[0]!.id };
}

describe('job lifecycle', () => {
  it('skips the checkout with GIT_STRATEGY none', async () => {
    const { status, trace } = await runJob('j:\n  variables:\n    GIT_STRATEGY: none\n  script:\n    - test ! -e README.md\n    - echo empty dir ok\n');
    expect(status).toBe('success');
    expect(trace).toContain('Skipping Git repository setup');
    expect(trace).toContain('empty dir ok');
  });

  it('makes a shallow clone with GIT_DEPTH', async () => {
    const { status, trace } = await runJob('j:\n  variables:\n    GIT_DEPTH: "1"\n    GIT_STRATEGY: clone\n  script:\n    - test "$(git rev-parse --is-shallow-repository)" = true\n    - cat src/a.txt\n');
    expect(status, trace).toBe('success');
    expect(trace).toContain('with git depth set to 1');
  });

  it('clamps GET_SOURCES_ATTEMPTS out of range with a warning, as GitLab Runner 19 does', async () => {
    const { status, trace } = await runJob('j:\n  variables:\n    GET_SOURCES_ATTEMPTS: "11"\n  script:\n    - echo ran\n');
    expect(status, trace).toBe('success');
    expect(trace).toContain('WARNING: GET_SOURCES_ATTEMPTS: number of attempts out of the range [1, 10], clamping to: 10');
  });

  it('traces commands with CI_DEBUG_TRACE', async () => {
    const { status, trace } = await runJob('j:\n  variables:\n    CI_DEBUG_TRACE: "true"\n  script:\n    - X=1; echo "x is $X"\n');
    expect(status).toBe('success');
    expect(trace).toMatch(/\+ X=1/);
  });

  it('runs pre_build_script and post_build_script around the job script, with the runner environment', async () => {
    const { status, trace } = await runJob('j:\n  script:\n    - echo "script sees $RUNNER_VAR"\n', {
      pre_build_script: 'echo pre-build',
      post_build_script: 'echo post-build',
      environment: ['RUNNER_VAR=from the runner'],
    });
    expect(status).toBe('success');
    expect(trace.indexOf('pre-build')).toBeLessThan(trace.indexOf('script sees from the runner'));
    expect(trace.indexOf('script sees from the runner')).toBeLessThan(trace.indexOf('post-build'));
  });

  it('runs jobs with sh as well as bash', async () => {
    const { status, trace } = await runJob('j:\n  script:\n    - echo "quoted \\"$CI_JOB_NAME\\" ok"\n    - exit 5\n', { shell: 'sh' });
    expect(status, trace).toBe('failed');
    expect(trace).toContain('quoted "j" ok');
    expect(trace).toContain('ERROR: Job failed: exit status 5');
  });

  it('says in the job log when a stage outlived SIGTERM and was killed after the grace period', async () => {
    const { status, trace } = await runJob('j:\n  timeout: 2s\n  variables:\n    GIT_STRATEGY: none\n  script:\n    - trap "" TERM; sleep 300\n', { kill_grace_period: 1 });
    expect(status, trace).toBe('failed');
    expect(trace).toContain('WARNING: build_script did not stop within 1 s of SIGTERM; it was killed (SIGKILL)');
    expect(trace).toContain('ERROR: Job failed: execution took longer than 2 seconds');
  });

  it('names no forced kill when the stage stops on SIGTERM', async () => {
    const { status, trace } = await runJob('j:\n  timeout: 2s\n  variables:\n    GIT_STRATEGY: none\n  script:\n    - sleep 300\n', { kill_grace_period: 1 });
    expect(status, trace).toBe('failed');
    expect(trace).toContain('ERROR: Job failed: execution took longer than 2 seconds');
    expect(trace).not.toContain('SIGKILL');
  });

  it('finishes the job with a warning when after_script cannot be started', async () => {
    // The real executor, except that the after_script stage cannot start.
    const { result, jobId } = await runWrapped('j:\n  variables:\n    GIT_STRATEGY: none\n  script:\n    - echo built\n  after_script:\n    - echo never\n', (inner) => ({
      name: inner.name,
      cleanup: () => inner.cleanup(),
      ...(inner.settled ? { settled: inner.settled.bind(inner) } : {}),
      runStage: (request) => (request.stage === 'after_script' ? Promise.reject(new Error('could not start the after_script stage: spawn bash ENOENT')) : inner.runStage(request)),
    }));
    const trace = (await t.server.getTrace(jobId)).toString('utf8');
    expect(result.kind === 'job' && result.outcome.state, trace).toBe('success');
    expect(trace).toContain('WARNING: after_script failed: could not start the after_script stage: spawn bash ENOENT');
  });

  it('keeps the state dir, which names the job\'s processes for a restarted runner, until the executor has settled', async () => {
    let builds = '';
    const markers = (): Promise<string[]> => readdir(builds, { recursive: true }).then((names) => names.filter((name) => name.endsWith('process-marker')));
    const seen: string[][] = [];
    const { result } = await runWrapped('j:\n  variables:\n    GIT_STRATEGY: none\n  script:\n    - echo built\n', (inner, buildsDir) => {
      builds = buildsDir;
      return {
        name: inner.name,
        ...(inner.marker ? { marker: inner.marker } : {}),
        cleanup: () => inner.cleanup(),
        runStage: (request) => inner.runStage(request),
        // Slow enough that a state dir removal that did not wait would have happened.
        settled: async () => {
          await inner.settled?.();
          await new Promise((resolve) => setTimeout(resolve, 300));
          seen.push(await markers());
        },
      };
    });
    expect(result.kind === 'job' && result.outcome.state).toBe('success');
    const deadline = Date.now() + 10_000;
    while ((await markers()).length > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(seen).toHaveLength(1);
    expect(seen[0]).toHaveLength(1);
    expect(await markers()).toEqual([]);
  });

  it('runs a script entry that spans lines as one command', async () => {
    const { status, trace } = await runJob(`j:
  script:
    - |
      echo "one
      two"
    - "printf '%s|' \\"three\\nfour\\" | wc -l"
`);
    expect(status, trace).toBe('success');
    expect(trace).toMatch(/^one$/m);
    expect(trace).toMatch(/^two$/m);
    // One line break inside the quotes: wc counts 1.
    expect(trace).toMatch(/^ *1$/m);
  });

  it('gives CI_JOB_STATUS: running in the script, the outcome in after_script', async () => {
    const passed = await runJob('j:\n  script:\n    - echo "during=$CI_JOB_STATUS"\n  after_script:\n    - echo "after=$CI_JOB_STATUS"\n');
    expect(passed.trace).toContain('during=running');
    expect(passed.trace).toContain('after=success');
    const failed = await runJob('j:\n  script:\n    - exit 3\n  after_script:\n    - echo "after=$CI_JOB_STATUS"\n');
    expect(failed.trace).toContain('after=failed');
  });

  it('expands variables in artifacts:paths, an absolute path inside the project included', async () => {
    const { status, trace } = await runJob('j:\n  variables:\n    DIR: out\n  script:\n    - mkdir -p out sub && touch out/a sub/b\n  artifacts:\n    paths:\n      - $CI_PROJECT_DIR/$DIR\n      - ${DIR}/../sub\n');
    expect(status, trace).toBe('success');
    expect(trace).toMatch(/Archived 2 file\(s\)/);
  });

  it('saves each of several caches per its when, and restores from a fallback key', async () => {
    const d = await workDirs();
    const config = runnerSchema.parse({ name: 'job-test', url: t.url, token, builds_dir: d.builds, cache_dir: d.cache });
    const never = new AbortController().signal;
    const run = async (yaml: string) => {
      const p = await t.pipeline(yaml);
      await runOnce({ runner: config, services: defaultServices(silentLogger()), waitTimeoutMs: 20_000, pollIntervalMs: 200, stopWaiting: never, stopJob: never });
      return (await t.server.getTrace(p.jobs[0]!.id)).toString('utf8');
    };
    const first = await run(`j:
  script: [mkdir -p a b, echo one > a/f, echo two > b/f, exit 1]
  cache:
    - { key: on-success, paths: [a] }
    - { key: on-failure, paths: [b], when: on_failure }
`);
    expect(first).toContain('Created cache "on-failure"');
    expect(first).not.toContain('Creating cache on-success');
    const second = await run(`j:
  script: [cat b/f]
  cache: { key: new-branch, fallback_keys: [on-failure], paths: [b], policy: pull }
`);
    expect(second).toMatch(/Checking cache for new-branch\.\.\.\nWARNING: Cache file does not exist\nWARNING: Failed to extract cache\nChecking cache for on-failure\.\.\.\nRestored cache "on-failure"/);
    expect(second).toMatch(/^two$/m);
  });

  it('fails a job whose cache policy, once expanded, is none of GitLab\'s, as GitLab Runner does', async () => {
    const d = await workDirs();
    const config = runnerSchema.parse({ name: 'job-test', url: t.url, token, builds_dir: d.builds, cache_dir: d.cache });
    const p = await t.pipeline('j:\n  variables: { POLICY: sometimes }\n  script: [echo ran]\n  cache: { key: k, paths: [x], policy: $POLICY }\n');
    const never = new AbortController().signal;
    await runOnce({ runner: config, services: defaultServices(silentLogger()), waitTimeoutMs: 20_000, pollIntervalMs: 200, stopWaiting: never, stopJob: never });
    const job = p.jobs[0]!;
    const trace = (await t.server.getTrace(job.id)).toString('utf8');
    expect(t.server.getJob(job.id)?.status, trace).toBe('failed');
    expect(trace).toContain('unknown cache policy sometimes for k');
    expect(trace).not.toContain('$ echo ran');
  });

  it('passes artifacts from one stage to the next', async () => {
    const p = await t.pipeline('make:\n  stage: build\n  script:\n    - mkdir -p out && echo made > out/file.txt\n  artifacts:\n    paths:\n      - out/\nuse:\n  stage: test\n  script:\n    - cat out/file.txt\n');
    const d = await workDirs();
    const config = runnerSchema.parse({ name: 'job-test', url: t.url, token, builds_dir: d.builds, cache_dir: d.cache });
    const never = new AbortController().signal;
    for (let i = 0; i < 2; i += 1) {
      const r = await runOnce({ runner: config, services: defaultServices(silentLogger()), waitTimeoutMs: 20_000, pollIntervalMs: 200, stopWaiting: never, stopJob: never });
      expect(r.kind === 'job' && r.outcome.state).toBe('success');
    }
    const use = p.jobs.find((j) => j.name === 'use')!;
    expect((await t.server.getTrace(use.id)).toString()).toContain('made');
  });

  it('keeps the full log the output-limit notice names, past recovery, until it is a week old', async () => {
    const { status, trace } = await runJob('j:\n  script:\n    - seq 1 3000\n', { output_limit: 1 });
    expect(status).toBe('success');
    const path = /full log is kept on the runner at (\S+?)\u001b/.exec(trace)?.[1];
    expect(path, trace).toBeDefined();
    const full = await readFile(path!, 'utf8');
    expect(full).toContain('\n3000\n');
    expect(full).toContain('Job succeeded');
    const dir = dirname(path!);
    expect(await readdir(dir)).toEqual(['trace.log']);

    // A daemon restart's recovery owes nothing for it and leaves it alone.
    const config = runnerSchema.parse({ name: 'job-test', url: t.url, token, builds_dir: '/nonexistent', cache_dir: '/nonexistent' });
    const client = new RunnerApiClient({ url: t.url, executor: 'shell' });
    await recoverDeliveries([dir], config, client, new AbortController().signal, silentLogger());
    await client.close();
    expect((await stat(path!)).isFile()).toBe(true);

    expect(await pruneKeptLogs(dirname(dir), 'trace.log')).toBe(0);
    const eightDaysAgo = new Date(Date.now() - 8 * 24 * 60 * 60 * 1000);
    await utimes(path!, eightDaysAgo, eightDaysAgo);
    expect(await pruneKeptLogs(dirname(dir), 'trace.log')).toBe(1);
    await expect(stat(dir)).rejects.toThrow(/ENOENT/);
  });
});
