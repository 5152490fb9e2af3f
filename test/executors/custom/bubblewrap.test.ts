/**
 * The example driver examples/custom/bubblewrap, as shipped, running a real pipeline of the reference
 * server: a build job that caches and keeps artifacts, and a test job that gets both, each stage in a
 * bubblewrap sandbox (Debian's `bubblewrap`; skipped where bwrap cannot start one). The helper
 * commands inside the sandbox are this build of ci-runner (CI_RUNNER_BIN).
 */
import { execa } from 'execa';
import { mkdtemp, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runnerSchema } from '../../../src/agent/config/schema.js';
import { defaultServices } from '../../../src/agent/services.js';
import { silentLogger } from '../../../src/log/index.js';
import { workDirs } from '../../cli/helpers.js';
import { runOnce } from '../../helpers/run-once.js';
import { startTestServer, type TestServer } from '../../helpers/server.js';

const EXAMPLE = resolve(fileURLToPath(new URL('../../../examples/custom/bubblewrap', import.meta.url)));
const CLI = resolve(fileURLToPath(new URL('../../../dist/cli/main.js', import.meta.url)));
const works = (await execa('bwrap', ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', 'true'], { reject: false })).exitCode === 0;

let t: TestServer;
let token: string;
const saved = { root: process.env.CI_RUNNER_BWRAP_ROOT, bin: process.env.CI_RUNNER_BIN };

beforeAll(async () => {
  if (!works) return;
  t = await startTestServer({ files: { 'README.md': '# sandboxed\n' } });
  ({ token } = await t.registerRunner());
  process.env.CI_RUNNER_BWRAP_ROOT = await mkdtemp(join(tmpdir(), 'ci-runner-bwrap-'));
  process.env.CI_RUNNER_BIN = `${process.execPath} ${CLI}`;
});
afterAll(async () => {
  await t?.close();
  for (const [name, value] of [['CI_RUNNER_BWRAP_ROOT', saved.root], ['CI_RUNNER_BIN', saved.bin]] as const) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

describe.skipIf(!works)('examples/custom/bubblewrap', () => {
  it('runs a pipeline with cache and artifacts, each stage in a sandbox, and leaves no job dir behind', async () => {
    const d = await workDirs();
    const p = await t.pipeline(`
stages: [build, test]
build:
  stage: build
  cache: { key: deps, paths: [deps/] }
  script:
    - test "$PWD" = /tmp/builds/group/project
    - mkdir -p deps dist && echo dep > deps/d.txt && echo built > dist/out.txt
    - echo "pid $$ in a new PID namespace"
  artifacts: { paths: [dist/] }
test:
  stage: test
  cache: { key: deps, paths: [deps/], policy: pull }
  script:
    - cat dist/out.txt deps/d.txt
    - "! test -e $HOME/../../../etc/nonexistent-host-file"
`);
    const custom = Object.fromEntries(['config', 'prepare', 'run', 'cleanup'].map((name) => [`${name}_exec`, join(EXAMPLE, `${name}.sh`)]));
    const runner = runnerSchema.parse({ name: 'bwrap', url: t.url, token, api: 'v4', executor: 'custom', builds_dir: d.builds, cache_dir: d.cache, trace_update_interval: 0.2, custom });
    const never = new AbortController().signal;
    const traces: string[] = [];
    for (const job of p.jobs) {
      await runOnce({ runner, services: defaultServices(silentLogger()), waitTimeoutMs: 20_000, pollIntervalMs: 200, stopWaiting: never, stopJob: never });
      const done = await t.waitForJob(job.id, (j) => j.status === 'success' || j.status === 'failed', 120_000);
      const trace = (await t.server.getTrace(job.id)).toString('utf8');
      traces.push(trace);
      expect(done.status, trace).toBe('success');
    }
    expect(traces[0]).toMatch(/Using Custom executor with driver bubblewrap \S+\.\.\./);
    expect(traces[0]).toContain('Created cache');
    expect(traces[1]).toContain('Successfully extracted cache');
    expect(traces[1]).toContain('built');
    // Only the cache stays on the host.
    expect(await readdir(process.env.CI_RUNNER_BWRAP_ROOT!)).toEqual(['cache']);
  }, 300_000);
});
