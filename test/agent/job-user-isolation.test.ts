/**
 * Shell jobs as a job user (global `user`) with a root daemon: a job must not get the daemon to run
 * its programs (git settings planted in the checkout) or to write where it points (a directory the
 * daemon uses swapped for a symlink). Needs root (a system user, switching to it); skipped otherwise.
 */
import { logText } from '../helpers/log-text.js';
import { spawn } from 'node:child_process';
import { chmod, chown, lstat, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { runnerSchema } from '../../src/agent/config/schema.js';
import { JobProcessInCheckoutError, takeProject } from '../../src/agent/job/job-user.js';
import type { RunAs } from '../../src/executors/run-as.js';
import { runOnce } from '../helpers/run-once.js';
import { defaultServices } from '../../src/agent/services.js';
import { silentLogger } from '../../src/log/index.js';
import type { PipelineView } from '../../src/server/index.js';
import { workDirs } from '../cli/helpers.js';
import { ensureTestUser, isRoot } from '../helpers/job-user.js';
import { jobYaml, makeTrap, plantLines, PLANTS } from '../helpers/planted-git.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

if (!isRoot) console.log('skipping the job user isolation tests: they need root (useradd, switching users)');

let t: TestServer;
let token: string;
let runAs: RunAs;
beforeAll(async () => {
  if (!isRoot) return;
  runAs = await ensureTestUser();
  t = await startTestServer();
  ({ token } = await t.registerRunner());
});
afterAll(async () => {
  await t?.close();
});

/** Fresh builds and cache dirs the job user can reach (mkdtemp makes them 0700). */
async function userDirs(): Promise<{ builds: string; cache: string }> {
  const d = await workDirs();
  await chmod(d.root, 0o755);
  onTestFinished(() => rm(d.root, { recursive: true, force: true }));
  return d;
}

/** A dir only root can enter (mkdtemp's 0700), holding one root-only file, `secret`. */
async function rootOnlyDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'ci-runner-victim-'));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'secret'), 'root only\n', { mode: 0o600 });
  return dir;
}

/** Runs the first job of `pipeline` (YAML, or one already queued) as the job user, in `dirs`; its status and trace. */
async function runAsUser(pipeline: string | PipelineView, dirs: { builds: string; cache: string }) {
  const p = typeof pipeline === 'string' ? await t.pipeline(pipeline) : pipeline;
  const runner = runnerSchema.parse({ name: 'as-user', url: t.url, token, builds_dir: dirs.builds, cache_dir: dirs.cache, trace_update_interval: 0.2 });
  const never = new AbortController().signal;
  await runOnce({ runner, services: defaultServices(silentLogger(), runAs), waitTimeoutMs: 20_000, pollIntervalMs: 200, stopWaiting: never, stopJob: never });
  const id = p.jobs[0]!.id;
  return { status: t.server.getJob(id)?.status, trace: logText(await t.server.getTrace(id)) };
}

describe.skipIf(!isRoot)('a job user cannot steer the root daemon', () => {
  it.each(PLANTS)('a planted %s never runs when the next job fetches', async (plant) => {
    const trap = await makeTrap();
    const dirs = await userDirs();
    const first = await runAsUser(jobYaml(plantLines(plant, trap)), dirs);
    expect(first.status, first.trace).toBe('success');
    const second = await runAsUser(jobYaml(['cat README.md']), dirs);
    expect(second.status, second.trace).toBe('success');
    expect(second.trace).toContain('Fetching changes');
    expect(await trap.ran()).toEqual([]);
  });

  // Each dir the daemon makes or writes below builds_dir, from the job's point of view.
  const SWAPPED = {
    'the slot dir': '"$(dirname "$(dirname "$CI_PROJECT_DIR")")"',
    'the namespace dir': '"$(dirname "$CI_PROJECT_DIR")"',
    'the state dirs beside the project': '"$CI_PROJECT_DIR.tmp"',
    'the project dir': '"$CI_PROJECT_DIR"',
    'the checkout\'s .git': '"$CI_PROJECT_DIR/.git"',
  };
  it.each(Object.entries(SWAPPED))('%s swapped for a symlink to a root-only dir: the dir is left as it was', async (_what, path) => {
    const victim = await rootOnlyDir();
    const dirs = await userDirs();
    const swap = `t=${path}; cd /; mv "$t" "$t.moved" && ln -s ${victim} "$t" && echo swapped || echo could-not-swap`;
    const first = await runAsUser(jobYaml([swap]), dirs);
    expect(first.status, first.trace).toBe('success');
    const second = await runAsUser(jobYaml(['cat README.md']), dirs);
    expect(second.status, second.trace).toBe('success');
    const info = await lstat(victim);
    expect(info.mode & 0o7777).toBe(0o700);
    expect(info.uid).toBe(0);
    expect(await readdir(victim)).toEqual(['secret']);
  });

  it('still has its untracked files collected as artifacts (the daemon lists them in the checkout with git, as root)', async () => {
    const dirs = await userDirs();
    const p = await t.pipeline('j:\n  script:\n    - echo new > new.txt\n  artifacts:\n    untracked: true\n');
    const run = await runAsUser(p, dirs);
    expect(run.status, run.trace).toBe('success');
    expect(run.trace).toContain('Archived 1 file(s)');
  });

  it('cannot read the trace spool or delivery record in its state dir (they are the runner\'s)', async () => {
    const dirs = await userDirs();
    const state = '"$CI_PROJECT_DIR.tmp/build-$CI_JOB_ID"';
    const run = await runAsUser(jobYaml([`for f in trace.log trace-state.json; do if cat ${state}/$f >/dev/null 2>&1; then echo "read $f"; else echo "refused $f"; fi; done`]), dirs);
    expect(run.status, run.trace).toBe('success');
    expect(run.trace).toContain('refused trace.log');
    expect(run.trace).toContain('refused trace-state.json');
  });

  it('a coordinator\'s variable named after a path outside the state dir never gets that file handed to the job user (issue 34)', async () => {
    const victim = await rootOnlyDir();
    const dirs = await userDirs();
    const secret = join(victim, 'secret');
    const name = `${'../'.repeat(24)}${secret.slice(1)}`;
    // Once as a plain variable whose value is where the name leads, once as a file variable.
    const p = await t.server.createPipeline({
      project: t.projectName,
      config: 'j:\n  script:\n    - echo ran\n',
      variables: { [name]: secret, [`${name}/../other`]: 'written?' },
      variableFlags: { [name]: { masked: false }, [`${name}/../other`]: { file: true, masked: false } },
    });
    const run = await runAsUser(p, dirs);
    expect(run.status, run.trace).toBe('success');
    expect((await lstat(secret)).uid).toBe(0);
    expect(await readdir(victim)).toEqual(['secret']);
  });

  it('a project dir swapped for a symlink to a root-only dir before the artifacts are collected: none of its files are archived', async () => {
    const victim = await rootOnlyDir();
    const dirs = await userDirs();
    const swap = `cd /; mv "$CI_PROJECT_DIR" "$CI_PROJECT_DIR.moved" && ln -s ${victim} "$CI_PROJECT_DIR" || echo could-not-swap`;
    const p = await t.pipeline(`j:\n  script:\n    - ${JSON.stringify(swap)}\n  artifacts:\n    paths: [secret]\n`);
    const run = await runAsUser(p, dirs);
    expect(t.server.getJob(p.jobs[0]!.id)?.artifacts, run.trace).toBeNull();
    expect(await readdir(victim)).toEqual(['secret']);
  });

  it('the daemon refuses to take back a checkout while a process of the job user is still inside it', async () => {
    const base = await mkdtemp(join(tmpdir(), 'ci-runner-take-'));
    onTestFinished(() => rm(base, { recursive: true, force: true }));
    const project = join(base, 'project');
    await mkdir(join(project, 'sub'), { recursive: true });
    await chown(project, runAs.uid, runAs.gid);
    await chown(join(project, 'sub'), runAs.uid, runAs.gid);
    // One of the job user's processes has its working directory in the checkout, another is elsewhere.
    const start = (cwd: string) => {
      const child = spawn('sleep', ['300'], { cwd, uid: runAs.uid, gid: runAs.gid, stdio: 'ignore' });
      onTestFinished(() => void child.kill('SIGKILL'));
      return child;
    };
    const inside = start(join(project, 'sub'));
    start('/');
    await new Promise((resolve) => inside.once('spawn', resolve));
    const taking = takeProject(project, runAs);
    await expect(taking).rejects.toThrow(JobProcessInCheckoutError);
    await expect(taking).rejects.toThrow(`process ${inside.pid} of the job user`);
    inside.kill('SIGKILL');
    await new Promise((resolve) => inside.once('exit', resolve));
    await takeProject(project, runAs);
    expect((await lstat(project)).uid).toBe(0);
  });
});
