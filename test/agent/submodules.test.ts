/**
 * GIT_SUBMODULE_STRATEGY end to end: a project whose submodules live in other projects on the same
 * reference server, cloned by an in-process runner with the build token sent as a header only.
 */
import { readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runnerSchema } from '../../src/agent/config/schema.js';
import { runOnce } from '../helpers/run-once.js';
import { defaultServices } from '../../src/agent/services.js';
import { silentLogger } from '../../src/log/index.js';
import { createGitRepo, git } from '../helpers/git.js';
import { makeTrap } from '../helpers/planted-git.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { workDirs } from '../cli/helpers.js';
import { shortToken } from '../../src/util/short-token.js';

let t: TestServer;
let token: string;
const repos: string[] = [];

/** Adds `source` as submodule `name` of `repo`, then points .gitmodules at `url` and commits. */
async function addSubmodule(repo: string, source: string, name: string, url: string): Promise<void> {
  // A local path is only a way to create the gitlink; the committed URL is the server one.
  await git(repo, ['-c', 'protocol.file.allow=always', 'submodule', 'add', '-q', source, name]);
  await git(repo, ['config', '-f', '.gitmodules', `submodule.${name}.url`, url]);
  await git(repo, ['add', '.gitmodules']);
  await git(repo, ['commit', '-q', '-m', `add submodule ${name}`]);
}

beforeAll(async () => {
  const deep = await createGitRepo({ 'deep.txt': 'from the nested submodule\n' });
  const lib = await createGitRepo({ 'lib.txt': 'from the library submodule\n' });
  repos.push(deep, lib);
  await addSubmodule(lib, deep, 'deep', '../deep.git');
  // A project whose submodule is written as an SSH URL of the server (GIT_SUBMODULE_FORCE_HTTPS).
  const ssh = await createGitRepo({ 'app.txt': 'the ssh app\n' });
  repos.push(ssh);
  await addSubmodule(ssh, lib, 'lib', 'git@127.0.0.1:group/lib.git');
  t = await startTestServer({ projects: [{ name: 'group/lib', path: lib }, { name: 'group/deep', path: deep }, { name: 'group/ssh-app', path: ssh }] });
  // Relative (resolved against the project's own URL) and absolute URLs on the same server.
  await addSubmodule(t.projectPath, lib, 'lib', '../lib.git');
  await addSubmodule(t.projectPath, deep, 'abs', `${t.url}/group/deep.git`);
  ({ token } = await t.registerRunner());
});
afterAll(async () => {
  await t.close();
  await Promise.all(repos.map((path) => rm(path, { recursive: true, force: true })));
});

/** Every file named `config` under `dir` (the repository's and each submodule's under .git/modules). */
async function gitConfigs(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile() && e.name === 'config').map((e) => join(e.parentPath, e.name));
}

/**
 * Runs one job in-process. Its script first leaves the build token and project dir next to the
 * project (outside the trace, which masks the token anyway) so the test can look for leaks.
 */
async function runJob(strategy: string, script: string[], d?: { builds: string; cache: string }, variables: Record<string, string> = {}, project?: string) {
  d ??= await workDirs();
  const lines = ['printf %s "$CI_BUILD_TOKEN" > ../build-token', ...script];
  const extra = Object.entries(variables).map(([key, value]) => `    ${key}: ${JSON.stringify(value)}\n`).join('');
  const yaml = `j:\n  variables:\n    GIT_STRATEGY: fetch\n    GIT_SUBMODULE_STRATEGY: ${strategy}\n${extra}  script:\n${lines.map((l) => `    - ${JSON.stringify(l)}\n`).join('')}`;
  const p = project ? await t.server.createPipeline({ project, config: yaml }) : await t.pipeline(yaml);
  const config = runnerSchema.parse({ name: 'submodule-test', url: t.url, token, builds_dir: d.builds, cache_dir: d.cache, trace_update_interval: 0.2 });
  const never = new AbortController().signal;
  await runOnce({ runner: config, services: defaultServices(silentLogger()), waitTimeoutMs: 20_000, pollIntervalMs: 200, stopWaiting: never, stopJob: never });
  const id = p.jobs[0]!.id;
  const projectDir = join(d.builds, shortToken(token), '0', ...(project ?? 'group/project').split('/'));
  const buildToken = await readFile(join(projectDir, '..', 'build-token'), 'utf8').catch(() => '');
  return { status: t.server.getJob(id)?.status, trace: (await t.server.getTrace(id)).toString('utf8'), projectDir, buildToken };
}

/** The build token, raw or inside the Basic header, appears neither in the trace nor in any git config. */
async function expectNoCredentials(run: { trace: string; projectDir: string; buildToken: string }): Promise<void> {
  expect(run.buildToken).toMatch(/\S{8,}/);
  const header = Buffer.from(`gitlab-ci-token:${run.buildToken}`).toString('base64');
  expect(run.trace).not.toContain(run.buildToken);
  expect(run.trace).not.toContain(header);
  const configs = await gitConfigs(join(run.projectDir, '.git'));
  expect(configs.length).toBeGreaterThan(0);
  for (const file of configs) {
    const text = await readFile(file, 'utf8');
    expect(text, file).not.toContain(run.buildToken);
    expect(text, file).not.toContain(header);
    expect(text.toLowerCase(), file).not.toContain('extraheader');
  }
}

describe('GIT_SUBMODULE_STRATEGY', () => {
  it('normal: checks out relative and absolute submodules on the same server, not nested ones, with no credentials left behind', async () => {
    const run = await runJob('normal', ['cat lib/lib.txt', 'cat abs/deep.txt', 'test -z "$(ls -A lib/deep)"', 'echo nested-left-empty']);
    expect(run.status, run.trace).toBe('success');
    expect(run.trace).toContain('from the library submodule');
    expect(run.trace).toContain('from the nested submodule');
    expect(run.trace).toContain('nested-left-empty');
    await expectNoCredentials(run);
    const modules = await gitConfigs(join(run.projectDir, '.git', 'modules'));
    expect(modules.length).toBe(2);
  });

  it('recursive: checks out nested submodules too', async () => {
    const run = await runJob('recursive', ['cat lib/deep/deep.txt', 'cat lib/lib.txt']);
    expect(run.status, run.trace).toBe('success');
    expect(run.trace).toContain('from the nested submodule');
    expect(run.trace).toContain('from the library submodule');
    expect(run.trace).toContain('Updating/initializing submodules recursively');
    await expectNoCredentials(run);
  });

  it('fetch into a reused build dir: submodules come back clean, whatever the previous job left in them', async () => {
    const d = await workDirs();
    const first = await runJob('normal', ['echo changed > lib/lib.txt', 'touch lib/stray.txt'], d);
    expect(first.status, first.trace).toBe('success');
    const second = await runJob('normal', ['cat lib/lib.txt', 'test ! -e lib/stray.txt', 'echo stray-gone'], d);
    expect(second.status, second.trace).toBe('success');
    expect(second.trace).toContain('Fetching changes');
    expect(second.trace).toContain('from the library submodule');
    expect(second.trace).toContain('stray-gone');
    await expectNoCredentials(second);
  });

  it('fetch into a reused build dir whose origin is an old server URL: relative submodules resolve against the current one', async () => {
    const d = await workDirs();
    // Submodules not cloned yet, so the second job has to reach the server for them.
    const first = await runJob('none', ['true'], d);
    expect(first.status, first.trace).toBe('success');
    // As if the server had moved since the last job (the reference server listens on port 0).
    await git(first.projectDir, ['remote', 'set-url', 'origin', 'http://127.0.0.1:1/group/project.git']);
    const second = await runJob('normal', ['cat lib/lib.txt'], d);
    expect(second.status, second.trace).toBe('success');
    expect(second.trace).toContain('Fetching changes');
    expect(second.trace).toContain('from the library submodule');
  });

  it('fetch into a reused build dir: nothing a job planted in a submodule\'s git dir or link runs or reaches another repository', async () => {
    const trap = await makeTrap();
    const foreign = await createGitRepo({ 'foreign.txt': 'another repository on the runner\n' });
    repos.push(foreign);
    const foreignHead = await git(foreign, ['rev-parse', 'HEAD']);
    const d = await workDirs();
    const plant = [
      `printf '[core]\\n\\tfsmonitor = ${trap.dir}/bin/fsmonitor\\n' >> .git/modules/lib/config`,
      'mkdir -p .git/modules/lib/hooks',
      `printf '#!/bin/sh\\necho lib-hook >> ${trap.dir}/ran\\n' > .git/modules/lib/hooks/post-checkout`,
      'chmod 755 .git/modules/lib/hooks/post-checkout',
      `printf 'gitdir: ${foreign}/.git\\n' > abs/.git`,
    ];
    const first = await runJob('normal', plant, d);
    expect(first.status, first.trace).toBe('success');
    const second = await runJob('normal', ['cat abs/deep.txt', 'test ! -e abs/foreign.txt', 'cat lib/lib.txt'], d);
    expect(second.status, second.trace).toBe('success');
    expect(second.trace).toContain('from the nested submodule');
    expect(await trap.ran()).toEqual([]);
    expect(await git(foreign, ['rev-parse', 'HEAD'])).toBe(foreignHead);
    expect(await git(foreign, ['status', '--porcelain'])).toBe('');
  });

  it('none: leaves the submodule directories empty', async () => {
    const run = await runJob('none', ['test -f .gitmodules', 'test -d lib', 'test -z "$(ls -A lib)"', 'echo submodule-left-empty']);
    expect(run.status, run.trace).toBe('success');
    expect(run.trace).toContain('submodule-left-empty');
    expect(run.trace).not.toContain('Updating/initializing submodules');
  });
});

describe('GitLab Runner 19\'s submodule variables', () => {
  it('GIT_SUBMODULE_PATHS updates the submodules it names, `:(exclude)` leaves one out', async () => {
    const only = await runJob('normal', ['cat lib/lib.txt', 'test -z "$(ls -A abs)"', 'echo abs-left-out'], undefined, { GIT_SUBMODULE_PATHS: 'lib' });
    expect(only.status, only.trace).toBe('success');
    expect(only.trace).toContain('abs-left-out');
    const excluded = await runJob('normal', ['cat abs/deep.txt', 'test -z "$(ls -A lib)"', 'echo lib-left-out'], undefined, { GIT_SUBMODULE_PATHS: ':(exclude)lib' });
    expect(excluded.status, excluded.trace).toBe('success');
    expect(excluded.trace).toContain('lib-left-out');
  });

  it('GIT_SUBMODULE_DEPTH makes shallow submodules; GIT_SUBMODULE_UPDATE_FLAGS reach git submodule update', async () => {
    const run = await runJob('recursive', ['test "$(git -C lib rev-parse --is-shallow-repository)" = true', 'cat lib/deep/deep.txt', 'echo shallow-submodules'], undefined, { GIT_SUBMODULE_DEPTH: '1', GIT_SUBMODULE_UPDATE_FLAGS: '--jobs 2 --single-branch' });
    expect(run.status, run.trace).toBe('success');
    expect(run.trace).toContain('Updating/initializing submodules recursively with git depth set to 1...');
    expect(run.trace).toContain('shallow-submodules');
    const refused = await runJob('normal', ['echo never'], undefined, { GIT_SUBMODULE_UPDATE_FLAGS: '--recursive' });
    expect(refused.status).toBe('failed');
    expect(refused.trace).toContain('GIT_SUBMODULE_UPDATE_FLAGS: the runner\'s git does not take "--recursive"');
  });

  it('GIT_SUBMODULE_FORCE_HTTPS fetches a submodule written as the server\'s SSH URL over HTTPS, with the job token', async () => {
    const without = await runJob('normal', ['echo never'], undefined, {}, 'group/ssh-app');
    expect(without.status).toBe('failed');
    const run = await runJob('normal', ['cat lib/lib.txt'], undefined, { GIT_SUBMODULE_FORCE_HTTPS: 'true' }, 'group/ssh-app');
    expect(run.status, run.trace).toBe('success');
    expect(run.trace).toContain('from the library submodule');
    await expectNoCredentials(run);
  });
});
