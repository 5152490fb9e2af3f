/**
 * A hostile coordinator (issue 34 item 2): a proxy in front of the reference server hands the runner a
 * job whose repository URL, refspecs, ref or sha would make the runner's own git run a command
 * (`--upload-pack=<command>` with a local repository) or read a repository on the runner's machine.
 * Against real git, over v4 and v1: the command never runs (its marker file is never made), and the
 * job fails with a reason naming the field.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runnerSchema } from '../../src/agent/config/schema.js';
import { defaultServices } from '../../src/agent/services.js';
import { silentLogger } from '../../src/log/index.js';
import { workDirs } from '../cli/helpers.js';
import { startPayloadProxy, type Payload, type PayloadProxy } from '../helpers/payload-proxy.js';
import { runOnce } from '../helpers/run-once.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

let t: TestServer;
let token: string;
let proxy: PayloadProxy;
let scratch: string;

beforeAll(async () => {
  t = await startTestServer({ files: { 'README.md': '# p\n' } });
  ({ token } = await t.registerRunner());
  proxy = await startPayloadProxy(t.url);
  scratch = await mkdtemp(join(tmpdir(), 'ci-runner-hostile-'));
});
afterAll(async () => {
  await proxy.close();
  await t.close();
  await rm(scratch, { recursive: true, force: true });
});

let markers = 0;
/** A file the injected command would create, and the command. */
function marker(): { path: string; command: string } {
  markers += 1;
  const path = join(scratch, `pwned-${markers}`);
  return { path, command: `touch ${path};` };
}

/** Runs one job of a one-job pipeline over `api`, its payload changed by `change`. */
async function runHostile(api: 'v1' | 'v4', change: (payload: Payload) => void) {
  const d = await workDirs();
  const p = await t.pipeline('j:\n  variables:\n    GIT_STRATEGY: fetch\n  script:\n    - echo the job ran\n');
  proxy.rewrite = (payload) => {
    change(payload);
    return JSON.stringify(payload);
  };
  const runner = runnerSchema.parse({ name: 'hostile', url: proxy.url, api, token, builds_dir: d.builds, cache_dir: d.cache, trace_update_interval: 0.2 });
  const never = new AbortController().signal;
  const result = await runOnce({ runner, services: defaultServices(silentLogger()), waitTimeoutMs: 20_000, pollIntervalMs: 200, stopWaiting: never, stopJob: never });
  const id = p.jobs[0]!.id;
  await t.waitForJob(id, (job) => job.status !== 'running' && job.status !== 'pending');
  return { result, job: t.server.getJob(id), trace: (await t.server.getTrace(id)).toString('utf8') };
}

const gitInfo = (payload: Payload): Record<string, unknown> => payload.git_info as Record<string, unknown>;

describe('a hostile coordinator against the runner\'s git', () => {
  it('v4: a refspec "--upload-pack=<command>" with repo_url "." runs nothing and fails the job', async () => {
    const { path, command } = marker();
    const { job, trace } = await runHostile('v4', (payload) => {
      gitInfo(payload).repo_url = '.';
      gitInfo(payload).refspecs = [`--upload-pack=${command}`];
    });
    expect(existsSync(path)).toBe(false);
    expect(job?.status, trace).toBe('failed');
    expect(trace).toContain('git_info.repo_url: must be an http:// or https:// URL');
    expect(trace).toContain('git_info.refspecs.0: must be a refspec');
    expect(trace).not.toContain('the job ran');
  });

  it('v4: a refspec "--upload-pack=<command>" beside a genuine http URL is refused too', async () => {
    const { path, command } = marker();
    const { job, trace } = await runHostile('v4', (payload) => {
      gitInfo(payload).refspecs = [`--upload-pack=${command}`, '+refs/heads/main:refs/remotes/origin/main'];
    });
    expect(existsSync(path)).toBe(false);
    expect(job?.status, trace).toBe('failed');
    expect(trace).toContain('git_info.refspecs.0: must be a refspec');
  });

  it('v4: a local path or file:// URL as the repository is refused, not read', async () => {
    for (const url of [t.projectPath, `file://${t.projectPath}`]) {
      const { job, trace } = await runHostile('v4', (payload) => {
        gitInfo(payload).repo_url = url;
      });
      expect(job?.status, trace).toBe('failed');
      expect(trace).toContain('git_info.repo_url: must be an http:// or https:// URL');
      expect(trace).not.toContain('the job ran');
    }
  });

  it('v4: a sha or ref git could read as an option is refused', async () => {
    const { job, trace } = await runHostile('v4', (payload) => {
      gitInfo(payload).sha = '--orphan=x';
      gitInfo(payload).ref = '--upload-pack=x';
    });
    expect(job?.status, trace).toBe('failed');
    expect(trace).toContain('git_info.sha: must be a commit SHA');
    expect(trace).toContain('git_info.ref: must be a valid branch or tag name');
  });

  it('v1: a repo_url "--upload-pack=<command>" or a local path runs and reads nothing, and fails the job', async () => {
    const { path, command } = marker();
    const option = await runHostile('v1', (payload) => {
      payload.repo_url = `--upload-pack=${command}`;
    });
    expect(existsSync(path)).toBe(false);
    expect(option.job?.status, option.trace).toBe('failed');
    expect(option.trace).toContain('repo_url: must be an http:// or https:// URL');

    const local = await runHostile('v1', (payload) => {
      payload.repo_url = t.projectPath;
    });
    expect(local.job?.status, local.trace).toBe('failed');
    expect(local.trace).toContain('repo_url: must be an http:// or https:// URL');
    expect(local.trace).not.toContain('the job ran');
  });
});
