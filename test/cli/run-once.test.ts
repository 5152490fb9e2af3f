import { logText } from '../helpers/log-text.js';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { git } from '../helpers/git.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { cli } from './cli.js';
import { allGone, pidsIn, waitUntil, workDirs } from './helpers.js';
import { shortToken } from '../../src/util/short-token.js';

let t: TestServer;
let token: string;

beforeAll(async () => {
  t = await startTestServer({ files: { 'README.md': '# project\n', 'hello.sh': 'echo "hello from the repo"\n' } });
  ({ token } = await t.registerRunner());
});
afterAll(async () => {
  await t.close();
});

async function runOnce(extra: string[] = [], dirs?: { builds: string; cache: string }) {
  const d = dirs ?? (await workDirs());
  return cli(['run-once', '--url', t.url, '--token', token, '--builds-dir', d.builds, '--cache-dir', d.cache, '--wait-timeout', '20s', ...extra]);
}

async function trace(jobId: number): Promise<string> {
  return logText(await t.server.getTrace(jobId));
}

describe('run-once', () => {
  it('runs a passing job, reports success and exits 0', async () => {
    const p = await t.pipeline(`
variables:
  GREETING: "hi"
  DERIVED: "$GREETING there, $$literal"
ok:
  script:
    - sh hello.sh
    - echo "job=$CI_JOB_NAME id=$CI_JOB_ID sha=$CI_COMMIT_SHA ref=$CI_COMMIT_REF_NAME"
    - echo "derived=$DERIVED"
    - test "$CI_PROJECT_DIR" = "$(pwd)"
`);
    const jobId = p.jobs[0]!.id;
    const result = await runOnce();
    expect(result.exitCode, result.all).toBe(0);
    expect(t.server.getJob(jobId)?.status).toBe('success');
    const text = await trace(jobId);
    expect(text).toContain('Running with ci-runner');
    // No config file: a system id for the process, as GitLab Runner's run-single makes.
    expect(text).toMatch(new RegExp(`\\n  on run-once ${shortToken(token)}, system ID: [sr]_[0-9a-zA-Z]{12}\\n`));
    expect(text).toMatch(/Checking out [0-9a-f]{8} as detached HEAD \(ref is main\)\.\.\./);
    expect(text).toContain('$ sh hello.sh');
    expect(text).toContain('hello from the repo');
    expect(text).toMatch(/job=ok id=\d+ sha=[0-9a-f]{40} ref=main/);
    expect(text).toContain('derived=hi there, $literal');
    expect(text).toContain('Job succeeded');
    expect(text).not.toMatch(/gitlab-ci-token:[^@\s]+@/);
  });

  it('exits 1 when the job fails, runs after_script anyway and names the exit status', async () => {
    const p = await t.pipeline(`
broken:
  script:
    - echo before
    - exit 3
    - echo never
  after_script:
    - echo "cleaning up after $CI_JOB_NAME"
`);
    const jobId = p.jobs[0]!.id;
    const result = await runOnce();
    expect(result.exitCode, result.all).toBe(1);
    expect(t.server.getJob(jobId)?.status).toBe('failed');
    const text = await trace(jobId);
    expect(text).toContain('cleaning up after broken');
    expect(text).not.toContain('\nnever');
    expect(text).toContain('ERROR: Job failed: exit status 3');
  });

  it('exits 4 when no job arrives within --wait-timeout', async () => {
    const d = await workDirs();
    const result = await cli(['run-once', '--url', t.url, '--token', token, '--builds-dir', d.builds, '--cache-dir', d.cache, '--wait-timeout', '1s']);
    expect(result.exitCode, result.all).toBe(4);
    expect(result.all).toContain('No job arrived');
  });

  it('exits 3 when the coordinator refuses the runner token', async () => {
    const d = await workDirs();
    const result = await cli(['run-once', '--url', t.url, '--token', 'not-a-runner-token', '--builds-dir', d.builds, '--wait-timeout', '5s']);
    expect(result.exitCode, result.all).toBe(3);
    expect(result.all).toMatch(/refused the runner token \(403\)/);
  });

  it('exits 3 when the coordinator cannot be reached', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const d = await workDirs();
    const result = await cli(['run-once', '--url', `http://127.0.0.1:${port}/`, '--token', token, '--builds-dir', d.builds, '--wait-timeout', '2s', '--poll-interval', '200ms']);
    expect(result.exitCode, result.all).toBe(3);
    expect(result.all).toContain('could not get a job');
  });

  it('exits 3 at once, without waiting out the wait timeout, when the proxy URL in the environment is not one', async () => {
    const d = await workDirs();
    const result = await cli(['run-once', '--url', t.url, '--token', token, '--builds-dir', d.builds, '--wait-timeout', '0'], { env: { HTTP_PROXY: 'socks5://127.0.0.1:1080', NO_PROXY: '', no_proxy: '' } });
    expect(result.exitCode, result.all).toBe(3);
    expect(result.all).toContain('the proxy URL "socks5://127.0.0.1:1080" is not http or https (socks5 proxies are not supported)');
  });

  it('exits 2 on bad usage', async () => {
    const result = await cli(['run-once', '--url', t.url]);
    expect(result.exitCode).toBe(2);
    expect(result.all).toContain('--token');
  });

  it('fails a job that runs past its timeout, kills it and says so', async () => {
    const d = await workDirs();
    const pidFile = join(d.root, 'pids');
    const p = await t.pipeline(`
slow:
  timeout: 2s
  script:
    - sleep 1000 & echo $! >> ${pidFile}
    - sleep 1001
`);
    const jobId = p.jobs[0]!.id;
    const result = await runOnce([], d);
    expect(result.exitCode, result.all).toBe(1);
    expect(t.server.getJob(jobId)?.status).toBe('failed');
    expect(await trace(jobId)).toContain('ERROR: Job failed: execution took longer than 2 seconds');
    await waitUntil(async () => allGone(await pidsIn(pidFile)), 10_000, 'job processes gone');
  });

  it('stops a job canceled on the server within seconds and leaves no process behind', async () => {
    const d = await workDirs();
    const pidFile = join(d.root, 'pids');
    const p = await t.pipeline(`
cancel-me:
  script:
    - sleep 1000 & echo $! >> ${pidFile}
    - ( sleep 1001 & echo $! >> ${pidFile} ) &
    - setsid sh -c 'echo $$ >> ${pidFile}; exec sleep 1002' &
    - echo started
    - sleep 1003
`);
    const jobId = p.jobs[0]!.id;
    const running = runOnce([], d);
    await waitUntil(async () => (await pidsIn(pidFile)).length >= 3 && (await trace(jobId)).includes('started'), 30_000, 'job started');
    const pids = await pidsIn(pidFile);
    t.server.cancelJob(jobId);
    const result = await running;
    expect(result.exitCode, result.all).toBe(1);
    expect(t.server.getJob(jobId)?.status).toBe('canceled');
    await waitUntil(() => allGone(pids), 10_000, 'job processes gone');
  });

  it('reuses the build dir of an earlier job and fetches instead of cloning', async () => {
    const d = await workDirs();
    const first = await t.pipeline('first:\n  script:\n    - echo "dir=$CI_PROJECT_DIR"\n    - touch left-behind\n');
    expect((await runOnce([], d)).exitCode).toBe(0);
    await git(t.projectPath, ['commit', '-q', '--allow-empty', '-m', 'a new commit to fetch']);
    const second = await t.pipeline('second:\n  script:\n    - echo "dir=$CI_PROJECT_DIR"\n    - test ! -e left-behind\n');
    const result = await runOnce([], d);
    expect(result.exitCode, result.all).toBe(0);
    const firstTrace = await trace(first.jobs[0]!.id);
    const secondTrace = await trace(second.jobs[0]!.id);
    expect(firstTrace).toContain('Created fresh repository.');
    expect(secondTrace).toContain('Fetching changes');
    expect(secondTrace).not.toContain('Created fresh repository.');
    expect(secondTrace).not.toContain('is here already');
    const dirOf = (text: string) => /^dir=(\S+)/m.exec(text)?.[1];
    expect(dirOf(secondTrace)).toBe(dirOf(firstTrace));
    expect(dirOf(firstTrace)).toBe(join(d.builds, shortToken(token), '0', 'group', 'project'));
    // the checkout keeps no credentials
    const gitConfig = await readFile(join(d.builds, shortToken(token), '0', 'group', 'project', '.git', 'config'), 'utf8');
    expect(gitConfig).toContain('url = http://127.0.0.1');
    expect(gitConfig).not.toContain('gitlab-ci-token');
  });

  it('skips the fetch for a later job of the same commit in the same slot, and fetches again for a new commit', async () => {
    const d = await workDirs();
    await git(t.projectPath, ['commit', '-q', '--allow-empty', '-m', 'the commit of two jobs']);
    const sha = await git(t.projectPath, ['rev-parse', 'HEAD']);
    // The first job leaves an untracked file, a changed and a staged file; the second gets the
    // commit's clean tree, detached, without a fetch, then leaves HEAD on a branch of its own at the
    // same commit; the third is detached again (a checkout, so a fetch first).
    const p = await t.pipeline(`stages: [one, two, three]
first:
  stage: one
  script:
    - touch left-behind
    - echo changed > README.md
    - echo staged > staged && git add staged
second:
  stage: two
  script:
    - test ! -e left-behind && test ! -e staged
    - test "$(cat README.md)" = "# project"
    - test -z "$(git status --porcelain)"
    - test "$(git rev-parse --abbrev-ref HEAD)" = HEAD
    - git log -1 --format=%H
    - git checkout -q -b a-branch-of-its-own
third:
  stage: three
  script:
    - test "$(git rev-parse --abbrev-ref HEAD)" = HEAD
`);
    expect((await runOnce([], d)).exitCode).toBe(0);
    const result = await runOnce([], d);
    expect(result.exitCode, result.all).toBe(0);
    const second = await trace(p.jobs[1]!.id);
    expect(second).toContain(`Commit ${sha.slice(0, 8)} is here already under the refs this job fetches: skipping the fetch`);
    expect(second).toContain(sha);
    const last = await runOnce([], d);
    expect(last.exitCode, last.all).toBe(0);
    const third = await trace(p.jobs[2]!.id);
    expect(third).toContain('Fetching changes');
    expect(third).not.toContain('is here already');
    expect(p.jobs.map((job) => t.server.getJob(job.id)?.status)).toEqual(['success', 'success', 'success']);
    await git(t.projectPath, ['commit', '-q', '--allow-empty', '-m', 'a newer commit']);
    const newer = await git(t.projectPath, ['rev-parse', 'HEAD']);
    const next = await t.pipeline('fourth:\n  script:\n    - git log -1 --format=%H\n');
    expect((await runOnce([], d)).exitCode).toBe(0);
    const fourth = await trace(next.jobs[0]!.id);
    expect(fourth).toContain('Fetching changes');
    expect(fourth).not.toContain('is here already');
    expect(fourth).toContain(newer);
  });

  it('checks out the job\'s own commit in a kept checkout where an earlier job planted a replacement for it', async () => {
    const d = await workDirs();
    await git(t.projectPath, ['commit', '-q', '--allow-empty', '-m', 'the commit a job tries to replace']);
    const p = await t.pipeline(`stages: [one, two]
plant:
  stage: one
  script:
    - echo poisoned > README.md
    - git -c user.name=x -c user.email=x@x commit -q -a -m poison
    - git replace "$CI_COMMIT_SHA" HEAD
check:
  stage: two
  script:
    - cat README.md
    - test "$(cat README.md)" = "# project"
`);
    expect((await runOnce([], d)).exitCode).toBe(0);
    const result = await runOnce([], d);
    expect(result.exitCode, await trace(p.jobs[1]!.id)).toBe(0);
  });

  it('reports a build whose payload it cannot read as failed instead of dropping it', async () => {
    const updates: Array<{ url: string; body: Record<string, unknown> }> = [];
    const fake = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        if (req.url?.startsWith('/ci/api/v1/builds/register')) {
          res.writeHead(201, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ id: 77, token: 'build-token-77', sha: 'short', ref: 'main', name: 'x' }));
          return;
        }
        updates.push({ url: req.url ?? '', body: JSON.parse(body || '{}') as Record<string, unknown> });
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{}');
      });
    });
    await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
    try {
      const d = await workDirs();
      const url = `http://127.0.0.1:${(fake.address() as AddressInfo).port}/`;
      // A v1-only server that answers every other path with 200: the API is said, not asked.
      const result = await cli(['run-once', '--url', url, '--token', 'runner-token-1234', '--api', 'v1', '--builds-dir', d.builds, '--wait-timeout', '5s']);
      expect(result.exitCode, result.all).toBe(1);
      const update = updates.find((u) => u.url.startsWith('/ci/api/v1/builds/77'));
      expect(update?.body.state).toBe('failed');
      expect(String(update?.body.trace)).toMatch(/ERROR: Job failed: the runner could not read the build.*sha/);
    } finally {
      await new Promise((resolve) => fake.close(resolve));
    }
  });
});
