/**
 * Build payloads the way GitLab 8.x–9.x writes them — `null` in optional positions, keys this runner
 * does not know — sent as raw JSON to the real client: a proxy on 127.0.0.1 rewrites the reference
 * server's E4 answer and passes everything else through, so the job clones, runs, traces and reports
 * against the real reference server.
 */
import { logText } from '../helpers/log-text.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runnerSchema } from '../../src/agent/config/schema.js';
import { runOnce } from '../helpers/run-once.js';
import { defaultServices } from '../../src/agent/services.js';
import { silentLogger } from '../../src/log/index.js';
import { startPayloadProxy, type PayloadProxy } from '../helpers/payload-proxy.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { workDirs } from '../cli/helpers.js';

type Payload = Record<string, unknown> & { options: Record<string, unknown>; variables: Record<string, unknown>[]; depends_on_builds: Record<string, unknown>[] };

let t: TestServer;
let token: string;
let proxy: PayloadProxy;
let proxyUrl: string;
/** Applied to the next E4 `201` body; the raw JSON text it returns is what the client receives. */
let rewrite: (payload: Payload) => string = (payload) => JSON.stringify(payload);

beforeAll(async () => {
  t = await startTestServer({ files: { 'README.md': '# p\n' } });
  ({ token } = await t.registerRunner());
  proxy = await startPayloadProxy(t.url);
  proxy.rewrite = (payload) => rewrite(payload as Payload);
  proxyUrl = proxy.url;
});
afterAll(async () => {
  await proxy.close();
  await t.close();
});

/** Queues `yaml`, runs its first pending job through the proxy with `change` applied to the payload. */
async function runThroughProxy(yaml: string, change: (payload: Payload) => void, jobIndex = 0) {
  const d = await workDirs();
  const p = await t.pipeline(yaml);
  rewrite = (payload) => {
    change(payload);
    return JSON.stringify(payload);
  };
  // The proxy rewrites v1's build payloads (GitLab 8.x–9.x wrote those nulls); v4's are unit-tested.
  const runner = runnerSchema.parse({ name: 'nulls', url: proxyUrl, api: 'v1', token, builds_dir: d.builds, cache_dir: d.cache, trace_update_interval: 0.2 });
  const never = new AbortController().signal;
  const result = await runOnce({ runner, services: defaultServices(silentLogger()), waitTimeoutMs: 20_000, pollIntervalMs: 200, stopWaiting: never, stopJob: never });
  const id = p.jobs[jobIndex]!.id;
  return { result, job: t.server.getJob(id), trace: logText(await t.server.getTrace(id)), pipeline: p };
}

const nullAll = (object: Record<string, unknown>, keys: string[]): void => {
  for (const key of keys) object[key] = null;
};

describe('build payloads with nulls, sent raw to the real client', () => {
  it('runs a job whose artifacts_expire_at and every other optional top-level field is null', async () => {
    const { job, trace } = await runThroughProxy('j:\n  stage: test\n  script:\n    - echo "stage=[$CI_JOB_STAGE] before=[$CI_COMMIT_BEFORE_SHA]"\n', (payload) => {
      nullAll(payload, ['artifacts_expire_at', 'artifacts_file', 'status', 'stage', 'project_name', 'tag', 'before_sha', 'allow_git_fetch', 'timeout', 'credentials', 'depends_on_builds']);
      // The server also sends these two among its variables; without them, what the job sees is what the runner made of the null fields.
      const variables = payload.variables as Array<{ key: string }>;
      payload.variables = variables.filter((v) => v.key !== 'CI_JOB_STAGE' && v.key !== 'CI_COMMIT_BEFORE_SHA');
    });
    expect(job?.status, trace).toBe('success');
    expect(trace).toContain('stage=[] before=[]');
  });

  it('runs a job whose options is null', async () => {
    const { job, trace } = await runThroughProxy('j:\n  script:\n    - echo ran with no options\n  after_script:\n    - echo after\n', (payload) => {
      payload.options = null as never;
    });
    expect(job?.status, trace).toBe('success');
    expect(trace).toContain('ran with no options');
  });

  it('runs a job with every options key null', async () => {
    const { job, trace } = await runThroughProxy('j:\n  script:\n    - echo options all null\n', (payload) => {
      nullAll(payload.options, ['image', 'services', 'artifacts', 'cache', 'dependencies', 'after_script', 'environment']);
    });
    expect(job?.status, trace).toBe('success');
    expect(trace).toContain('options all null');
  });

  it('uploads artifacts and runs after_script when their optional keys are null', async () => {
    const yaml = 'j:\n  script:\n    - echo data > out.txt\n  after_script:\n    - echo after ran\n  artifacts:\n    paths: [out.txt]\n';
    const { job, trace } = await runThroughProxy(yaml, (payload) => {
      const artifacts = payload.options.artifacts as Record<string, unknown>;
      Object.assign(artifacts, { name: null, untracked: null, when: null, expire_in: null });
      (artifacts.paths as unknown[]).push(null);
      payload.options.cache = { key: null, paths: null, untracked: null };
      payload.options.environment = { name: 'review', url: null, action: null };
      payload.options.after_script = ['echo after ran', null];
    });
    expect(job?.status, trace).toBe('success');
    expect(trace).toContain('after ran');
    expect(job?.artifacts?.filename).toBe('artifacts.tar.gz');
  });

  it('exports a null variable value as empty and masks a variable whose public is null', async () => {
    const { job, trace } = await runThroughProxy('j:\n  script:\n    - echo "desc=[$CI_RUNNER_DESCRIPTION] secret=$EXTRA_SECRET"\n', (payload) => {
      for (const variable of payload.variables) if (variable.key === 'CI_RUNNER_DESCRIPTION') variable.value = null;
      payload.variables.push({ key: 'EXTRA_SECRET', value: 'do-not-print-me', public: null }, { key: null, value: 'x', public: true }, null as never);
    });
    expect(job?.status, trace).toBe('success');
    expect(trace).toContain('desc=[] secret=[MASKED]');
    expect(trace).not.toContain('do-not-print-me');
  });

  it("downloads a dependency's artifacts when its size and unused fields are null", async () => {
    const yaml = 'make:\n  stage: build\n  script:\n    - echo made > made.txt\n  artifacts:\n    paths: [made.txt]\nuse:\n  stage: test\n  script:\n    - cat made.txt\n';
    const first = await runThroughProxy(yaml, () => undefined);
    expect(first.job?.status, first.trace).toBe('success');
    const d = await workDirs();
    rewrite = (payload) => {
      const dep = payload.depends_on_builds[0]!;
      nullAll(dep, ['ref', 'tag', 'sha', 'status', 'stage', 'project_id', 'project_name']);
      (dep.artifacts_file as Record<string, unknown>).size = null;
      return JSON.stringify(payload);
    };
    // The proxy rewrites v1's build payloads (GitLab 8.x–9.x wrote those nulls); v4's are unit-tested.
  const runner = runnerSchema.parse({ name: 'nulls', url: proxyUrl, api: 'v1', token, builds_dir: d.builds, cache_dir: d.cache, trace_update_interval: 0.2 });
    const never = new AbortController().signal;
    await runOnce({ runner, services: defaultServices(silentLogger()), waitTimeoutMs: 20_000, pollIntervalMs: 200, stopWaiting: never, stopJob: never });
    const use = first.pipeline.jobs[1]!.id;
    const trace = logText(await t.server.getTrace(use));
    expect(t.server.getJob(use)?.status, trace).toBe('success');
    expect(trace).toContain('Downloading artifacts for make');
    expect(trace).toContain('$ cat made.txt\u001b[0;m\nmade\n');
  });

  it('runs a job whose payload carries fields this runner does not know, at every level', async () => {
    const future = { introduced_in: '9.5', nested: { list: [1, null, { x: null }] } };
    const { job, trace } = await runThroughProxy('j:\n  script:\n    - echo unknown fields ignored\n', (payload) => {
      Object.assign(payload, { future_field: future, runner_info: null, coverage_regex: null });
      Object.assign(payload.options, { future_option: future, retry: null });
      for (const variable of payload.variables) variable.future = future;
    });
    expect(job?.status, trace).toBe('success');
    expect(trace).toContain('unknown fields ignored');
  });

  it('reports the build failed, naming the field, when a field the runner needs is null', async () => {
    const { result, job, trace } = await runThroughProxy('j:\n  script:\n    - echo never\n', (payload) => {
      payload.sha = null;
    });
    expect(result.kind).toBe('job');
    expect(job?.status).toBe('failed');
    expect(trace).toContain('invalid build payload: sha: missing or null (the runner needs it)');
    expect(trace).not.toContain('$ echo never');
  });
});
