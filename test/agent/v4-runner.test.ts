/**
 * The runner against the reference server over `/api/v4`: the daemon (`Agent`) with `api = "v4"`
 * runs real pipelines through the real server and shell executor. Calls are recorded at the client
 * boundary (the daemon's `wrapClient`), what reached the server is read back from it.
 */
import { logText } from '../helpers/log-text.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent } from '../../src/agent/agent.js';
import { configSchema } from '../../src/agent/config/schema.js';
import { defaultServices } from '../../src/agent/services.js';
import type { RunnerApi } from '../../src/client/api.js';
import type { Executor } from '../../src/executors/types.js';
import { silentLogger } from '../../src/log/index.js';
import type { CreatePipelineRequest } from '../../src/server/state/create-pipeline.js';
import type { JobView } from '../../src/server/types.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { waitUntil, workDirs } from '../cli/helpers.js';

let t: TestServer;
let token: string;
beforeAll(async () => {
  t = await startTestServer({ files: { 'README.md': '# p\n', 'src/a.txt': 'a\n' } });
  ({ token } = await t.registerRunner());
});
afterAll(async () => {
  await t.close();
});

interface Call {
  method: string;
  args: unknown[];
  status: number;
}

/** A running daemon on the test server over v4, recording its client calls and the stages it ran. */
async function startRunner(options: { runner?: Record<string, unknown> } = {}) {
  const d = await workDirs();
  const config = configSchema.parse({
    concurrent: 2,
    check_interval: 0.2,
    runners: [{ name: 'v4-test', url: t.url, token, api: 'v4', builds_dir: d.builds, cache_dir: d.cache, ...options.runner }],
  });
  const calls: Call[] = [];
  const stages: Array<{ job: string; stage: string }> = [];
  const services = defaultServices(silentLogger());
  const record = (client: RunnerApi): RunnerApi =>
    new Proxy(client, {
      get(target, property, receiver) {
        const value: unknown = Reflect.get(target, property, receiver);
        if (typeof value !== 'function' || property === 'close') return value;
        return async (...args: unknown[]) => {
          const result = (await (value as (...a: unknown[]) => Promise<{ status: number }>).apply(target, args)) ?? { status: 0 };
          calls.push({ method: String(property), args, status: result.status });
          return result;
        };
      },
    });
  const agent = new Agent(
    config,
    {
      ...services,
      createExecutor: async (runner) => {
        const inner = await services.createExecutor(runner);
        const recorded: Executor = {
          name: inner.name,
          cleanup: () => inner.cleanup(),
          ...(inner.settled ? { settled: inner.settled.bind(inner) } : {}),
          runStage: (request) => {
            stages.push({ job: request.variables.find((v) => v.key === 'CI_JOB_NAME')?.value ?? '', stage: request.stage });
            return inner.runStage(request);
          },
        };
        return recorded;
      },
    },
    {},
    { wrapClient: record, systemId: 's_0123456789ab' },
  );
  agent.start();
  return {
    calls,
    stages,
    async stop() {
      agent.shutdown('forceful');
      await agent.done();
    },
  };
}

async function pipeline(config: string, extra: Partial<CreatePipelineRequest> = {}) {
  return t.server.createPipeline({ project: t.projectName, config, ...extra });
}

async function finished(pipelineId: number): Promise<JobView[]> {
  await waitUntil(() => ['success', 'failed', 'canceled'].includes(t.server.getPipeline(pipelineId)?.status ?? ''), 60_000, `pipeline ${pipelineId} done`);
  return t.server.getPipeline(pipelineId)!.jobs.map((job) => t.server.getJob(job.id)!);
}

async function traceOf(job: { id: number }): Promise<string> {
  return logText(await t.server.getTrace(job.id));
}

describe('a pipeline over v4', () => {
  it('passes artifacts and a dotenv report from one stage to the next', async () => {
    const runner = await startRunner();
    try {
      const p = await pipeline([
        'make:',
        '  stage: build',
        '  script:',
        '    - mkdir -p out && echo made > out/file.txt',
        '    - echo "FROM_DOTENV=hello-dotenv" > build.env',
        '  artifacts:',
        '    paths: [out/]',
        '    reports:',
        '      dotenv: build.env',
        'use:',
        '  stage: test',
        '  script:',
        '    - cat out/file.txt',
        '    - echo "dotenv says $FROM_DOTENV"',
        '',
      ].join('\n'));
      const [make, use] = await finished(p.id);
      expect(make?.status, await traceOf(make!)).toBe('success');
      expect(use?.status, await traceOf(use!)).toBe('success');
      const trace = await traceOf(use!);
      expect(trace).toContain('made');
      expect(trace).toContain('dotenv says hello-dotenv');
      const uploads = runner.calls.filter((call) => call.method === 'uploadArtifacts').map((call) => call.args[2] as { artifactType?: string; artifactFormat?: string; filename: string });
      expect(uploads).toEqual(expect.arrayContaining([
        expect.objectContaining({ artifactType: 'archive', artifactFormat: 'zip' }),
        expect.objectContaining({ artifactType: 'dotenv', artifactFormat: 'gzip' }),
      ]));
    } finally {
      await runner.stop();
    }
  });

  it('masks masked variables, writes file variables to files and leaves raw ones unexpanded', async () => {
    const runner = await startRunner();
    try {
      const p = await pipeline('j:\n  script:\n    - echo "secret=$SECRET"\n    - test -f "$CONF" && cat "$CONF"\n    - echo "raw=$RAWV"\n', {
        variables: { SECRET: 'sup3r-s3cret-value', CONF: 'first line\nsecond line\n', RAWV: 'a$HOME' },
        variableFlags: { SECRET: { masked: true }, CONF: { file: true, masked: false }, RAWV: { raw: true, masked: false } },
      });
      const [job] = await finished(p.id);
      const trace = await traceOf(job!);
      expect(job?.status, trace).toBe('success');
      expect(trace).toContain('secret=[MASKED]');
      expect(trace).not.toContain('sup3r-s3cret-value');
      expect(trace).toContain('first line\nsecond line');
      expect(trace).toContain('raw=a$HOME');
    } finally {
      await runner.stop();
    }
  });

  it('reports a failed job with its failure reason and exit code', async () => {
    const runner = await startRunner();
    try {
      const p = await pipeline('j:\n  script:\n    - echo failing\n    - exit 3\n  allow_failure:\n    exit_codes: [3]\n');
      const [job] = await finished(p.id);
      expect(job).toMatchObject({ status: 'failed', failure_reason: 'script_failure', allow_failure: true });
      // The server marks the job failed before its answer reaches the runner, where the call is recorded.
      const isFinal = (call: Call) => call.method === 'updateJob' && (call.args[1] as { state: string }).state === 'failed' && call.status === 200;
      await waitUntil(() => runner.calls.some(isFinal), 30_000, 'the final update answered');
      const finals = runner.calls.filter(isFinal);
      expect(finals.at(-1)?.args[1]).toMatchObject({ state: 'failed', failureReason: 'script_failure', exitCode: 3, output: { bytesize: (await t.server.getTrace(job!.id)).length } });
    } finally {
      await runner.stop();
    }
  });
});

describe('cancel over v4', () => {
  it('stops the script of a silent job on a graceful cancel and still runs after_script', async () => {
    const runner = await startRunner();
    try {
      const p = await pipeline('j:\n  script:\n    - sleep 60\n  after_script:\n    - echo after-script-ran\n');
      const id = p.jobs[0]!.id;
      await t.waitForJob(id, (job) => job.status === 'running');
      await waitUntil(() => runner.stages.some((s) => s.stage === 'step_script'), 30_000, 'the script started');
      t.server.cancelJob(id);
      const [job] = await finished(p.id);
      expect(job?.status).toBe('canceled');
      expect(await traceOf(job!)).toContain('after-script-ran');
      expect(runner.stages.map((s) => s.stage)).toContain('after_script');
    } finally {
      await runner.stop();
    }
  });

  it('stops at once without after_script when the server cancels the job outright', async () => {
    const runner = await startRunner();
    try {
      const p = await pipeline('j:\n  script:\n    - sleep 60\n  after_script:\n    - echo after-script-ran\n');
      const id = p.jobs[0]!.id;
      await t.waitForJob(id, (job) => job.status === 'running');
      await waitUntil(() => runner.stages.some((s) => s.stage === 'step_script'), 30_000, 'the script started');
      // A second cancel of a canceling job is a forced one: the runner hears `canceled`, not `canceling`.
      t.server.cancelJob(id);
      t.server.cancelJob(id);
      const [job] = await finished(p.id);
      expect(job?.status).toBe('canceled');
      await waitUntil(() => runner.calls.some((call) => call.method === 'updateJob' && (call.args[1] as { state: string }).state !== 'running'), 30_000, 'the final update');
      expect(runner.stages.map((s) => s.stage)).not.toContain('after_script');
    } finally {
      await runner.stop();
    }
  });
});

describe('the trace over v4', () => {
  it('resumes from the server length after a 416 (a PATCH applied whose answer was lost)', async () => {
    const runner = await startRunner();
    try {
      t.server.faults.add({ endpoint: 'patch_trace', action: 'apply_then_error', status: 502, count: 1 });
      const p = await pipeline('j:\n  script:\n    - for i in 1 2 3; do echo "line $i"; sleep 0.3; done\n');
      const [job] = await finished(p.id);
      const trace = await traceOf(job!);
      expect(job?.status, trace).toBe('success');
      expect(runner.calls.filter((call) => call.method === 'patchTrace').map((call) => call.status)).toContain(416);
      for (const line of ['line 1', 'line 2', 'line 3', 'Job succeeded']) expect(trace.split(line), trace).toHaveLength(2);
    } finally {
      t.server.faults.clear();
      await runner.stop();
    }
  });

  it('repeats the final update while the server answers 202', async () => {
    const runner = await startRunner();
    try {
      const p = await pipeline('j:\n  script:\n    - echo done\n');
      const id = p.jobs[0]!.id;
      t.server.faults.add({ endpoint: 'update_build', action: 'error', status: 202, count: 2, buildId: id });
      const [job] = await finished(p.id);
      expect(job?.status).toBe('success');
      const isFinal = (call: Call) => call.method === 'updateJob' && (call.args[1] as { state: string }).state === 'success';
      await waitUntil(() => runner.calls.some((call) => isFinal(call) && call.status === 200), 30_000, 'the final update answered');
      const finals = runner.calls.filter(isFinal);
      expect(finals.map((call) => call.status)).toEqual([202, 202, 200]);
      expect(new Set(finals.map((call) => JSON.stringify(call.args[1]))).size).toBe(1);
    } finally {
      t.server.faults.clear();
      await runner.stop();
    }
  });
});
