import { mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { jobDirs, projectSlug, redactUrl } from '../../src/agent/job/build-dir.js';
import { shortToken } from '../../src/util/short-token.js';
import { invalidFileVariables, isValidVariableName, materializeFileVariables } from '../../src/agent/job/file-variables.js';
import { SlotAllocator } from '../../src/agent/job/slots.js';
import { collectVariables, expandVariables, refSlug, variableValue } from '../../src/agent/job/variables.js';
import { expandString } from '../../src/util/expand.js';
import { HOST_GIT_SETTINGS } from '../../src/git/host-config.js';
import type { BuildPayload } from '../../src/protocol/types.js';

const build: BuildPayload = {
  id: 42, ref: 'feature/X_1', tag: false, sha: '0123456789abcdef0123456789abcdef01234567', status: 'running', name: 'test:unit',
  token: 'build-token-xyz', stage: 'test', project_id: 7, project_name: 'app', commands: 'true',
  repo_url: 'http://gitlab-ci-token:build-token-xyz@127.0.0.1:9/acme/web-app.git', before_sha: '0'.repeat(40),
  allow_git_fetch: true, options: {}, timeout: 0,
  variables: [
    { key: 'CI_SERVER_NAME', value: 'GitLab', public: true },
    { key: 'BASE', value: 'base', public: true },
    { key: 'DERIVED', value: '${BASE}-$BASE-$MISSING-$$-$1-$?', public: true },
    { key: 'SECRET', value: 's3cr3t', public: false },
    { key: 'FROM_ENV', value: 'payload wins', public: true },
  ],
  depends_on_builds: [], credentials: [],
};

const ctx = { build, environment: ['FROM_ENV=runner', 'RUNNER_ONLY=yes'], projectDir: '/b/p', buildsDir: '/b', runnerName: 'r', runnerToken: 'abcdef0123' };

describe('job variables', () => {
  it('layers runner environment < runner defaults < payload variables', () => {
    const vars = expandVariables(collectVariables(ctx));
    expect(variableValue(vars, 'FROM_ENV')).toBe('payload wins');
    expect(variableValue(vars, 'RUNNER_ONLY')).toBe('yes');
    expect(variableValue(vars, 'CI_SERVER_NAME')).toBe('GitLab');
    expect(variableValue(vars, 'CI_PROJECT_DIR')).toBe('/b/p');
    expect(variableValue(vars, 'CI_JOB_ID')).toBe('42');
    expect(variableValue(vars, 'CI_BUILD_ID')).toBe('42');
    expect(variableValue(vars, 'CI_JOB_STAGE')).toBe('test');
    expect(variableValue(vars, 'CI_COMMIT_SHA')).toBe(build.sha);
    expect(variableValue(vars, 'CI_COMMIT_REF_SLUG')).toBe('feature-x-1');
    expect(vars.find((v) => v.key === 'CI_JOB_TOKEN')?.public).toBe(false);
    expect(vars.filter((v) => v.key === 'FROM_ENV')).toHaveLength(1);
  });

  it('expands $VAR and ${VAR} once; unknown and special names are empty; $$ is $', () => {
    const vars = expandVariables(collectVariables(ctx));
    expect(variableValue(vars, 'DERIVED')).toBe('base-base--$--');
    expect(expandString('$A$B', (n) => (n === 'A' ? '$B' : 'x'))).toBe('$Bx');
  });

  it('makes ref slugs like GitLab', () => {
    expect(refSlug('Feature/ABC_def')).toBe('feature-abc-def');
    expect(refSlug('-x-')).toBe('x');
    expect(refSlug('a'.repeat(80))).toHaveLength(63);
  });
});

describe('file variables', () => {
  it('holds names to GitLab\'s rule: letters, digits and _, at most 255', () => {
    for (const name of ['A', 'a_1', '1ST', '_', 'X'.repeat(255)]) expect(isValidVariableName(name), name).toBe(true);
    for (const name of ['', '../etc/passwd', 'a/b', '.', '..', 'A-B', 'A.B', 'A B', 'A\nB', 'X'.repeat(256), 'trace.log']) expect(isValidVariableName(name), name).toBe(false);
  });

  it('writes each file in the state dir and says where on the host; a file variable with another name is dropped, its path never made', async () => {
    const root = await mkdtemp(join(tmpdir(), 'ci-runner-file-vars-'));
    onTestFinished(() => rm(root, { recursive: true, force: true }));
    const stateDir = join(root, 'state');
    await mkdir(stateDir);
    const list = [
      { key: 'CONF', value: 'a=b\n', public: false, file: true },
      { key: '../escaped', value: 'outside', public: false, file: true },
      // A plain variable whose value names a path is only a value.
      { key: '../../x', value: join(root, 'x'), public: true },
    ];
    expect(invalidFileVariables(list)).toEqual(['../escaped']);
    const out = await materializeFileVariables(list, stateDir, (path) => `/builds${path.slice(root.length)}`);
    expect(out).toEqual([
      { key: 'CONF', value: '/builds/state/CONF', file: join(stateDir, 'CONF') },
      { key: '../../x', value: join(root, 'x'), public: true },
    ]);
    expect(await readFile(join(stateDir, 'CONF'), 'utf8')).toBe('a=b\n');
    expect((await readdir(root)).sort()).toEqual(['state']);
    expect(await readdir(stateDir)).toEqual(['CONF']);
  });
});

describe('build dirs', () => {
  it('uses <builds>/<short token>/<slot>/<namespace>/<project> and a private state dir beside it', () => {
    const dirs = jobDirs('/builds', 'glrt-t1_abcdef0123456', 2, build);
    expect(dirs.projectDir).toBe('/builds/abcdef012/2/acme/web-app');
    expect(dirs.stateDir).toBe('/builds/abcdef012/2/acme/web-app.tmp/build-42');
  });

  it('gives each project slot dirs of its own where the build stages see the slot dir as /builds', () => {
    const dirs = jobDirs('/builds', 'glrt-abcdef0123456', 2, build, false);
    expect(dirs.slotDir).toBe('/builds/abcdef012/project-7-concurrent-2');
    expect(dirs.projectDir).toBe('/builds/abcdef012/project-7-concurrent-2/acme/web-app');
  });

  it('shortens tokens as GitLab Runner 19 does', () => {
    expect(shortToken('glrt-t1_abcdefghijklmnop')).toBe('abcdefghi');
    expect(shortToken('glrt-abcdefghijklmnop')).toBe('abcdefghi');
    expect(shortToken('t2_abcdefghijklmnop')).toBe('abcdefghi');
    expect(shortToken('glrtr-abcdefghijklmnop')).toBe('abcdefghi');
    expect(shortToken('glcbt-abcdefghijklmnop')).toBe('abcdefghi');
    expect(shortToken('GR1348941abcdefghijklmnop')).toBe('abcdefghi');
    expect(shortToken('0123456789abcdef')).toBe('012345678');
    expect(shortToken('short')).toBe('short');
  });

  it('falls back to project-<id> for URLs without a usable path', () => {
    expect(projectSlug('/local/path.git', 7)).toBe('project-7');
    expect(projectSlug('http://h/a/../b.git', 7)).toBe('b');
    expect(projectSlug('http://h/', 7)).toBe('project-7');
    expect(projectSlug('http://h/a/%2e%2e/b.git', 7)).toBe('b'); // the URL parser resolves it; nothing escapes
    expect(projectSlug('http://h/a/%252e%252e/b.git', 7)).not.toContain('..');
  });

  it('gives a project path GitLab could not have, or one ending in .tmp (another project\'s state dirs), the fallback', () => {
    expect(projectSlug('http://h/group/sub.group/my_app-2.git', 7)).toBe('group/sub.group/my_app-2');
    // `group/project.tmp` is the state dirs of `group/project` next to it, whose jobs may run at the same time.
    expect(projectSlug('http://h/group/project.tmp.git', 7)).toBe('project-7');
    const slot = jobDirs('/b', 'abcdefgh', 0, { id: 1, repo_url: 'http://h/group/project.git', project_id: 1 });
    const other = jobDirs('/b', 'abcdefgh', 0, { id: 2, repo_url: 'http://h/group/project.tmp.git', project_id: 2 });
    expect(other.projectDir.startsWith(slot.tmpDir)).toBe(false);
    // A colon would split docker's --volume; blanks, percent-decoded bytes and the like are no GitLab path either.
    for (const path of ['g/a:b', 'g/a%20b', 'g/a%0Ab', 'g/%00', 'g/a%3A%2Fetc']) expect(projectSlug(`http://h/${path}.git`, 7), path).toBe('project-7');
  });

  it('strips credentials from URLs it prints', () => {
    expect(redactUrl(build.repo_url)).toBe('http://127.0.0.1:9/acme/web-app.git');
    expect(redactUrl('http://h/x.git')).toBe('http://h/x.git');
  });

  it('hands out the lowest free slot per runner and project, reusing released ones', () => {
    const slots = new SlotAllocator();
    const a = slots.acquire('t', 1);
    const b = slots.acquire('t', 1);
    const other = slots.acquire('t', 2);
    expect([a.slot, b.slot, other.slot]).toEqual([0, 1, 0]);
    a.release();
    expect(slots.acquire('t', 1).slot).toBe(0);
  });

  it('numbers a runner token\'s running jobs (CI_CONCURRENT_ID) over all its projects, reusing released numbers', () => {
    const slots = new SlotAllocator();
    const a = slots.acquire('t', 1);
    const b = slots.acquire('t', 2);
    const other = slots.acquire('u', 1);
    expect([a.concurrentId, b.concurrentId, other.concurrentId]).toEqual([0, 1, 0]);
    expect([a.slot, b.slot]).toEqual([0, 0]);
    a.release();
    expect(slots.acquire('t', 3).concurrentId).toBe(0);
  });
});

describe('get_sources commands', () => {
  it('never put the repository credentials on a command line, only into git\'s environment as a header', async () => {
    const { gitSourcesCommands, credentialHeader } = await import('../../src/agent/job/git-sources.js');
    for (const strategy of ['clone', 'fetch'] as const) {
      const text = gitSourcesCommands({ build, projectDir: '/b/p', strategy, depth: 0, submodules: 'recursive' }).join('\n');
      expect(text).not.toContain('build-token-xyz');
      expect(text).toContain(`GIT_CONFIG_VALUE_0='Authorization: Basic ${Buffer.from('gitlab-ci-token:build-token-xyz').toString('base64')}'`);
      expect(text).toContain(`export GIT_CONFIG_COUNT=${1 + HOST_GIT_SETTINGS.length} GIT_CONFIG_KEY_0='http.http://127.0.0.1:9/.extraHeader'`);
      // Nothing the checkout's own .git names runs (src/git/host-config.ts), and no credential helper
      // of the runner host is ever asked, for the clone or any submodule.
      expect(text).toContain("GIT_CONFIG_KEY_1='core.hooksPath' GIT_CONFIG_VALUE_1='/dev/null'");
      expect(text).toMatch(/GIT_CONFIG_KEY_\d+='credential\.helper' GIT_CONFIG_VALUE_\d+=''/);
      expect(text).not.toContain('-c credential.helper');
      expect(text).toContain('Checking out 01234567 as detached HEAD (ref is feature/X_1)...');
    }
    expect(credentialHeader('http://127.0.0.1/x.git')).toBeUndefined();
  });
});
