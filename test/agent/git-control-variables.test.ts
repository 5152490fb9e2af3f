/**
 * GitLab Runner 19's git control variables and the variables it sets, end to end: jobs of the
 * reference server over /api/v4, run by the shell executor in-process, against real git. Jobs that
 * share a builds dir run one after the other in the same slot, as a runner reusing a checkout does.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shortToken } from '../../src/util/short-token.js';
import { git } from '../helpers/git.js';
import { startPayloadProxy } from '../helpers/payload-proxy.js';
import { jobYaml, runV4Job, type Dirs } from '../helpers/v4-job.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

let t: TestServer;
let token: string;
let scratch: string;

beforeAll(async () => {
  t = await startTestServer({ files: { 'README.md': '# p\n', 'src/a.txt': 'a\n' } });
  await git(t.projectPath, ['tag', 'v1.0']);
  ({ token } = await t.registerRunner());
  scratch = await mkdtemp(join(tmpdir(), 'ci-runner-gitvars-'));
});
afterAll(async () => {
  await t.close();
  await rm(scratch, { recursive: true, force: true });
});

/** Runs one job with `variables` and `script`, in `d` (a fresh builds dir when absent), over v4. */
const runJob = (variables: Record<string, string>, script: string[], options: { d?: Dirs; runner?: Record<string, unknown> } = {}) => runV4Job(t, token, jobYaml(variables, script), options);

describe('git control variables', () => {
  it('GIT_CLEAN_FLAGS: -ffdx by default, `none` keeps what the last job left, -e keeps what it names', async () => {
    const first = await runJob({}, ['mkdir -p keep', 'echo k > keep/file', 'echo j > junk.txt']);
    expect(first.status, first.trace).toBe('success');
    const excluded = await runJob({ GIT_CLEAN_FLAGS: '-ffdx -e keep/' }, ['test -f keep/file', 'test ! -e junk.txt', 'echo cleaned-but-kept', 'echo j > junk.txt'], { d: first.d });
    expect(excluded.status, excluded.trace).toBe('success');
    expect(excluded.trace).toContain('cleaned-but-kept');
    const none = await runJob({ GIT_CLEAN_FLAGS: 'none' }, ['test -f junk.txt', 'echo nothing-cleaned'], { d: first.d });
    expect(none.status, none.trace).toBe('success');
    const fallback = await runJob({}, ['test ! -e junk.txt', 'test ! -e keep', 'echo all-cleaned'], { d: first.d });
    expect(fallback.status, fallback.trace).toBe('success');
  });

  it('GIT_FETCH_EXTRA_FLAGS replaces --prune --quiet: --no-tags fetches no tag', async () => {
    const tags = await runJob({ GIT_STRATEGY: 'clone' }, ['echo "tags=[$(git tag -l | tr "\\n" " ")]"']);
    expect(tags.status, tags.trace).toBe('success');
    expect(tags.trace).toContain('tags=[v1.0 ]');
    const none = await runJob({ GIT_STRATEGY: 'clone', GIT_FETCH_EXTRA_FLAGS: '--no-tags --quiet' }, ['echo "tags=[$(git tag -l | tr "\\n" " ")]"']);
    expect(none.status, none.trace).toBe('success');
    expect(none.trace).toContain('tags=[]');
  });

  it('refuses a git option that would run a program on the runner, naming the variable and the option; nothing runs', async () => {
    const marker = join(scratch, 'upload-pack-ran');
    const run = await runJob({ GIT_FETCH_EXTRA_FLAGS: `--upload-pack=touch ${marker}` }, ['echo never']);
    expect(run.status).toBe('failed');
    expect(run.trace).toContain(`ERROR: Job failed: GIT_FETCH_EXTRA_FLAGS: the runner's git does not take "--upload-pack=touch"`);
    expect(run.trace).not.toContain('$ echo never');
    expect(existsSync(marker)).toBe(false);
    const clone = await runJob({ GIT_CLONE_EXTRA_FLAGS: '--template=/tmp' }, ['echo never']);
    expect(clone.status).toBe('failed');
    expect(clone.trace).toContain('GIT_CLONE_EXTRA_FLAGS: the runner\'s git does not take "--template=/tmp"');
  });

  it('GIT_CHECKOUT false fetches without checking out', async () => {
    const run = await runJob({ GIT_STRATEGY: 'clone', GIT_CHECKOUT: 'false' }, ['test ! -e README.md', 'git rev-parse --verify -q refs/remotes/origin/main', 'echo fetched-not-checked-out']);
    expect(run.status, run.trace).toBe('success');
    expect(run.trace).toContain('Skipping Git checkout');
    expect(run.trace).toContain('fetched-not-checked-out');
  });

  it('GIT_STRATEGY empty: an empty <project>-empty dir, the slot\'s checkout left as it was', async () => {
    const first = await runJob({}, ['echo kept > mine.txt']);
    const run = await runJob({ GIT_STRATEGY: 'empty', GIT_CLEAN_FLAGS: 'none' }, ['echo "dir=$CI_PROJECT_DIR"', 'test -z "$(ls -A)"', 'echo empty-dir'], { d: first.d });
    expect(run.status, run.trace).toBe('success');
    expect(run.trace).toContain('Skipping Git repository setup and creating an empty build directory');
    expect(run.trace).toContain(`dir=${join(run.d.builds, shortToken(token), '0', 'group', 'project-empty')}`);
    const after = await runJob({ GIT_CLEAN_FLAGS: 'none' }, ['cat mine.txt'], { d: first.d });
    expect(after.trace).toContain('kept');
  });

  it('GIT_CLONE_PATH: refused for the shell executor unless custom_build_dir is enabled, then within the builds dir only', async () => {
    const off = await runJob({ GIT_CLONE_PATH: '$CI_BUILDS_DIR/mine/project' }, ['echo never']);
    expect(off.status).toBe('failed');
    expect(off.trace).toContain('ERROR: Job failed: setting GIT_CLONE_PATH is not allowed, enable `custom_build_dir` feature');
    expect(off.job.failure_reason).toBe('runner_configuration_error');
    const enabled = { runner: { custom_build_dir: { enabled: true } } };
    const on = await runJob({ GIT_CLONE_PATH: '$CI_BUILDS_DIR/mine/$CI_CONCURRENT_ID/project' }, ['echo "pwd=$(pwd) dir=$CI_PROJECT_DIR"', 'cat src/a.txt'], enabled);
    expect(on.status, on.trace).toBe('success');
    const expected = join(on.d.builds, 'mine', '0', 'project');
    expect(on.trace).toContain(`pwd=${expected} dir=${expected}`);
    const outside = await runJob({ GIT_CLONE_PATH: join(scratch, 'elsewhere') }, ['echo never'], enabled);
    expect(outside.status).toBe('failed');
    expect(outside.trace).toContain(`the GIT_CLONE_PATH="${join(scratch, 'elsewhere')}" has to be within "${outside.d.builds}"`);
    const own = await runJob({ GIT_CLONE_PATH: `$CI_BUILDS_DIR/${shortToken(token)}/1/x` }, ['echo never'], enabled);
    expect(own.status).toBe('failed');
    expect(own.trace).toContain('away from the runner\'s own directories');
  });

  it('sets the variables GitLab Runner 19 sets, the project dir in its layout', async () => {
    const names = ['CI_CONCURRENT_ID', 'CI_CONCURRENT_PROJECT_ID', 'CI_JOB_TIMEOUT', 'CI_RUNNER_SHORT_TOKEN', 'CI_SHARED_ENVIRONMENT', 'CI_DISPOSABLE_ENVIRONMENT', 'CI_RUNNER_REVISION', 'CI_RUNNER_EXECUTABLE_ARCH', 'RUNNER_TEMP_PROJECT_DIR', 'CI_PROJECT_DIR'];
    const run = await runJob({ CI_SHARED_ENVIRONMENT: 'job-set' }, names.map((name) => `echo "${name}=[$${name}]"`));
    expect(run.status, run.trace).toBe('success');
    const projectDir = join(run.d.builds, shortToken(token), '0', 'group', 'project');
    for (const line of [
      'CI_CONCURRENT_ID=[0]', 'CI_CONCURRENT_PROJECT_ID=[0]', 'CI_JOB_TIMEOUT=[3600]', `CI_RUNNER_SHORT_TOKEN=[${shortToken(token)}]`,
      'CI_SHARED_ENVIRONMENT=[true]', 'CI_DISPOSABLE_ENVIRONMENT=[]', `RUNNER_TEMP_PROJECT_DIR=[${projectDir}.tmp]`, `CI_PROJECT_DIR=[${projectDir}]`,
    ]) expect(run.trace).toContain(line);
    expect(run.trace).toMatch(/CI_RUNNER_REVISION=\[[0-9a-f]{8}|unknown\]/);
    expect(run.trace).toMatch(/CI_RUNNER_EXECUTABLE_ARCH=\[linux\/(amd64|arm64)\]/);
  });

  it('a job setting a variable this runner does not honour gets one warning naming it', async () => {
    const run = await runJob({ TRANSFER_METER_FREQUENCY: '5s' }, ['echo ran']);
    expect(run.status, run.trace).toBe('success');
    expect(run.trace.match(/TRANSFER_METER_FREQUENCY is not honoured by this runner/g)).toHaveLength(1);
  });

  it('says GIT_CLONE_EXTRA_FLAGS does not apply where v4 refspecs are fetched into a new repository', async () => {
    const run = await runJob({ GIT_STRATEGY: 'clone', GIT_CLONE_EXTRA_FLAGS: '--no-tags' }, ['echo ran']);
    expect(run.status, run.trace).toBe('success');
    expect(run.trace).toContain('WARNING: GIT_CLONE_EXTRA_FLAGS is not used: this job\'s sources are fetched into a new repository');
  });

  it('fetches from clone_url joined with the project\'s path instead of the payload\'s URL', async () => {
    const proxy = await startPayloadProxy(t.url);
    try {
      const run = await runJob({ GIT_STRATEGY: 'clone' }, ['cat src/a.txt'], { runner: { clone_url: proxy.url } });
      expect(run.status, run.trace).toBe('success');
      expect(proxy.requests.some((request) => request.startsWith('GET /group/project.git/info/refs'))).toBe(true);
    } finally {
      await proxy.close();
    }
  });
});
