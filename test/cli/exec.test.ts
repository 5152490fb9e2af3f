import { readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli } from './cli.js';
import { git, listFiles, makeRepo, removeTempDirs, repoFingerprint, tempDir, writeFiles } from './exec-helpers.js';

let state: string;

beforeAll(async () => {
  state = await tempDir('state');
});
afterAll(removeTempDirs);

function exec(repo: string, args: string[] = [], env: Record<string, string> = {}) {
  return cli(['exec', ...args], { cwd: repo, env: { XDG_STATE_HOME: state, ...env } });
}

const TWO_STAGES = `
stages: [build, test]
build:
  stage: build
  script:
    - mkdir -p out && cat greeting.txt > out/greeting.txt
  artifacts:
    paths: [out/]
test:
  stage: test
  script:
    - cat out/greeting.txt
`;

describe('exec on a working tree', () => {
  it('runs the uncommitted and untracked files as they are and leaves the repository, index, stash and tree untouched', async () => {
    const repo = await makeRepo({ '.gitlab-ci.yml': 'show:\n  script:\n    - cat tracked.txt\n    - cat new.txt\n    - cat staged.txt\n    - test ! -e ignored.txt && echo "no ignored file"\n', 'tracked.txt': 'committed\n', '.gitignore': 'ignored.txt\n' });
    // A stash, a staged change, an unstaged change, an untracked file and an ignored one.
    await writeFile(join(repo, 'tracked.txt'), 'stashed\n');
    await git(repo, ['stash', '-q']);
    await writeFiles(repo, { 'tracked.txt': 'uncommitted change\n', 'staged.txt': 'staged but not committed\n', 'new.txt': 'untracked file\n', 'ignored.txt': 'secret\n' });
    await git(repo, ['add', 'staged.txt']);
    const before = await repoFingerprint(repo);

    const result = await exec(repo);
    expect(result.exitCode, result.all).toBe(0);
    expect(result.stdout).toContain('uncommitted change');
    expect(result.stdout).toContain('untracked file');
    expect(result.stdout).toContain('staged but not committed');
    expect(result.stdout).toContain('no ignored file');
    expect(result.stdout).toMatch(/working tree with uncommitted changes \(snapshot [0-9a-f]{8}\) as branch main/);
    expect(await repoFingerprint(repo)).toEqual(before);
  });

  it('runs the commit itself when the tree is clean, so CI_COMMIT_SHA is HEAD', async () => {
    const repo = await makeRepo({ '.gitlab-ci.yml': 'sha:\n  script: echo "sha=$CI_COMMIT_SHA ref=$CI_COMMIT_REF_NAME"\n' });
    await git(repo, ['checkout', '-q', '-b', 'feature/x']);
    const head = (await git(repo, ['rev-parse', 'HEAD'])).trim();
    const result = await exec(repo);
    expect(result.exitCode, result.all).toBe(0);
    expect(result.stdout).toContain(`sha=${head} ref=feature/x`);
  });

  it('passes artifacts between stages, keeps logs and artifacts outside the tree and extracts them with --artifacts-to', async () => {
    const repo = await makeRepo({ '.gitlab-ci.yml': TWO_STAGES, 'greeting.txt': 'hello artifacts\n' });
    const to = await tempDir('artifacts');
    const result = await exec(repo, ['--artifacts-to', to]);
    expect(result.exitCode, result.all).toBe(0);
    expect(result.stdout).toMatch(/JOB\s+STAGE\s+STATUS\s+DURATION/);
    expect(result.stdout).toMatch(/build\s+build\s+success\s+\d+\.\d s/);
    expect(result.stdout).toMatch(/test\s+test\s+success/);
    expect(await readFile(join(to, 'build', 'out', 'greeting.txt'), 'utf8')).toBe('hello artifacts\n');
    const kept = /Logs and artifacts: (\S+)/.exec(result.stdout)?.[1];
    expect(kept?.startsWith(state)).toBe(true);
    const logs = await readdir(join(kept ?? '', 'logs'));
    expect(logs.sort()).toEqual(['1-build.log', '2-test.log']);
    const testLog = await readFile(join(kept ?? '', 'logs', '2-test.log'), 'utf8');
    expect(testLog).toContain('hello artifacts');
    // The next stage's job found the slot of the last one free, and its checkout at the commit.
    expect(testLog).toContain('is here already under the refs this job fetches: skipping the fetch');
    expect(await listFiles(repo)).toEqual(['.gitlab-ci.yml', 'greeting.txt']);
  });
});

describe('exec exit codes and output', () => {
  it('exits 1 when a job fails and shows an allowed failure as "failed (allowed)"', async () => {
    const repo = await makeRepo({ '.gitlab-ci.yml': 'ok:\n  script: echo fine\nallowed:\n  script: exit 3\n  allow_failure: true\nbroken:\n  script: exit 4\n' });
    const result = await exec(repo);
    expect(result.exitCode, result.all).toBe(1);
    expect(result.stdout).toMatch(/allowed\s+test\s+failed \(allowed\)/);
    expect(result.stdout).toMatch(/broken\s+test\s+failed\s/);
    expect(result.stdout).toContain('Pipeline #1 failed');
  });

  it('exits 0 when the only failure is allowed', async () => {
    const repo = await makeRepo({ '.gitlab-ci.yml': 'allowed:\n  script: exit 3\n  allow_failure: true\n' });
    const result = await exec(repo);
    expect(result.exitCode, result.all).toBe(0);
    expect(result.stdout).toContain('Pipeline #1 passed');
  });

  it('exits 2 on an invalid pipeline file, naming the job and key', async () => {
    const repo = await makeRepo({ '.gitlab-ci.yml': 'bad:\n  script: echo\n  artifacts:\n    paths: 3\n' });
    const result = await exec(repo);
    expect(result.exitCode, result.all).toBe(2);
    expect(result.stderr).toContain('.gitlab-ci.yml is not a valid pipeline');
    expect(result.stderr).toMatch(/jobs:bad artifacts:paths/);
  });

  it('exits 2 outside a git working tree and when the pipeline file is missing', async () => {
    const plain = await tempDir('plain');
    const outside = await exec(plain);
    expect(outside.exitCode, outside.all).toBe(2);
    expect(outside.stderr).toContain('is not in a git working tree');
    const repo = await makeRepo({ 'README.md': 'no pipeline\n' });
    const missing = await exec(repo);
    expect(missing.exitCode, missing.all).toBe(2);
    expect(missing.stderr).toContain('no pipeline file');
  });

  it('exits 2 saying git cannot be run when it is not installed', async () => {
    const repo = await makeRepo({ '.gitlab-ci.yml': 'j:\n  script: echo never\n' });
    const path = await tempDir('no-git');
    await symlink(process.execPath, join(path, 'node'));
    const result = await exec(repo, [], { PATH: path });
    expect(result.exitCode, result.all).toBe(2);
    expect(result.stderr).toMatch(/cannot run git: .*git: not found; is git installed\?/);
  });
});

describe('exec job selection and variables', () => {
  const PIPELINE = `
stages: [build, test, deploy]
build:
  stage: build
  script: echo "building"
test:
  stage: test
  script: echo "testing with FROM_FLAG=$FROM_FLAG FROM_FILE=$FROM_FILE BOTH=$BOTH"
deploy:
  stage: deploy
  script: echo deploying
  when: manual
`;

  it('lists the jobs that would run with stage, when and needs, running nothing', async () => {
    const repo = await makeRepo({ '.gitlab-ci.yml': PIPELINE });
    const result = await exec(repo, ['--list']);
    expect(result.exitCode, result.all).toBe(0);
    expect(result.stdout).toMatch(/JOB\s+STAGE\s+WHEN\s+NEEDS/);
    expect(result.stdout).toMatch(/build\s+build\s+on_success\s+-/);
    expect(result.stdout).toMatch(/deploy\s+deploy\s+manual/);
    expect(result.stdout).not.toContain('building');
    const only = await exec(repo, ['--list', '--stage', 'test']);
    expect(only.stdout).not.toMatch(/^build/m);
    expect(only.stdout).toMatch(/^test\s+test/m);
  });

  it('runs only the named job, with --variable winning over --env-file', async () => {
    const repo = await makeRepo({ '.gitlab-ci.yml': PIPELINE });
    const envFile = join(await tempDir('env'), 'vars.env');
    await writeFile(envFile, '# comment\nexport FROM_FILE="file value"\nBOTH=from-file\n');
    const result = await exec(repo, ['test', '--env-file', envFile, '--variable', 'FROM_FLAG=flag=value', '-v', 'BOTH=from-flag']);
    expect(result.exitCode, result.all).toBe(0);
    expect(result.stdout).toContain('testing with FROM_FLAG=flag=value FROM_FILE=file value BOTH=from-flag');
    expect(result.stdout).not.toContain('building');
    expect(result.stdout).not.toMatch(/job #\d+ deploy/);
  });

  it('exits 2 naming a job that is not in the pipeline', async () => {
    const repo = await makeRepo({ '.gitlab-ci.yml': PIPELINE });
    const result = await exec(repo, ['nope']);
    expect(result.exitCode, result.all).toBe(2);
    expect(result.stderr).toContain("no job 'nope' in this pipeline");
  });

  it("takes GitLab Runner's form `exec shell JOB`: the first word names the executor", async () => {
    const repo = await makeRepo({ '.gitlab-ci.yml': PIPELINE });
    const result = await exec(repo, ['shell', 'test']);
    expect(result.exitCode, result.all).toBe(0);
    expect(result.stdout).toContain('testing with');
    expect(result.stdout).not.toContain('building');
    // One word stays a job name, and a job named like the executor asks which was meant.
    expect((await exec(repo, ['shell'])).stderr).toContain("no job 'shell' in this pipeline");
    const clash = await makeRepo({ '.gitlab-ci.yml': `${PIPELINE}shell:\n  script: echo job shell\n` });
    const both = await exec(clash, ['shell', 'test']);
    expect(both.exitCode, both.all).toBe(2);
    expect(both.stderr).toContain("'shell' names both a job of this pipeline and an executor");
  });

  // Two jobs that each wait for the other's mark pass only when both run at once.
  it.skipIf(availableParallelism() < 2)('runs the ready jobs side by side by default (up to the number of CPUs)', async () => {
    const meet = await tempDir('meet');
    const job = (me: string, other: string) => `${me}:\n  script:\n    - touch ${meet}/${me}\n    - for i in $(seq 600); do test -e ${meet}/${other} && exit 0; sleep 0.1; done; exit 1\n`;
    const repo = await makeRepo({ '.gitlab-ci.yml': job('a', 'b') + job('b', 'a') });
    const result = await exec(repo);
    expect(result.exitCode, result.all).toBe(0);
  });

  it('prefixes whole lines with the job name when jobs run at once', async () => {
    const repo = await makeRepo({ '.gitlab-ci.yml': 'a:\n  script: printf "one\\ntwo\\n"\nb:\n  script: echo three\n' });
    const result = await exec(repo, ['--concurrent', '2']);
    expect(result.exitCode, result.all).toBe(0);
    expect(result.stdout).toMatch(/^\[a\] one$/m);
    expect(result.stdout).toMatch(/^\[a\] two$/m);
    expect(result.stdout).toMatch(/^\[b\] three$/m);
  });
});

// Playing manual jobs needs the admin route `POST /admin/api/jobs/:id/play` (the sched branch).
describe('exec --manual', () => {
  it('plays the named manual job when it comes up', async () => {
    const repo = await makeRepo({ '.gitlab-ci.yml': 'build:\n  stage: build\n  script: echo built\ndeploy:\n  stage: deploy\n  script: echo "deployed now"\n  when: manual\n' });
    const idle = await exec(repo);
    expect(idle.exitCode, idle.all).toBe(0);
    expect(idle.stdout).toContain("--manual 'deploy' plays it");
    expect(idle.stdout).not.toContain('deployed now');
    const played = await exec(repo, ['--manual', 'deploy']);
    expect(played.exitCode, played.all).toBe(0);
    expect(played.stdout).toContain('deployed now');
    expect(played.stdout).toMatch(/deploy\s+deploy\s+success/);
  });
});

// `needs:` is read by the pipeline engine of the sched branch; before it, the key is refused.
describe('exec with needs', () => {
  const DAG = `
stages: [build, test, deploy]
compile:
  stage: build
  script: echo compiled > built.txt
  artifacts:
    paths: [built.txt]
lint:
  stage: build
  script: echo linting
unit:
  stage: test
  needs: [compile]
  script: cat built.txt
deploy:
  stage: deploy
  needs: [unit]
  script: echo deploying
`;

  it('runs what the named job needs with --needs, and only the job without it', async () => {
    const repo = await makeRepo({ '.gitlab-ci.yml': DAG });
    const listed = await exec(repo, ['--list']);
    expect(listed.stdout).toMatch(/unit\s+test\s+on_success\s+compile/);
    const withNeeds = await exec(repo, ['unit', '--needs']);
    expect(withNeeds.exitCode, withNeeds.all).toBe(0);
    expect(withNeeds.stdout).toMatch(/job #\d+ compile/);
    expect(withNeeds.stdout).toContain('compiled');
    expect(withNeeds.stdout).not.toMatch(/job #\d+ (lint|deploy)/);
    const alone = await exec(repo, ['deploy']);
    expect(alone.exitCode, alone.all).toBe(0);
    expect(alone.stdout).toMatch(/job #\d+ deploy/);
    expect(alone.stdout).not.toMatch(/job #\d+ (compile|unit|lint)/);
  });
});

// rules, include and the collection of every problem come with the engine branch's pipeline reader.
describe('exec with the pipeline engine', () => {
  it('lists every problem of an invalid file, each with its job and key', async () => {
    const repo = await makeRepo({ '.gitlab-ci.yml': 'a:\n  script: echo\n  artifacts:\n    paths: 3\nb:\n  script: echo\n  when: sometimes\n' });
    const result = await exec(repo);
    expect(result.exitCode, result.all).toBe(2);
    expect(result.stderr).toMatch(/- jobs:a artifacts:paths/);
    expect(result.stderr).toMatch(/- jobs:b when/);
  });

  it("reports an invalid file before any of the runner starts (no containment probe, no runner)", async () => {
    const repo = await makeRepo({ '.gitlab-ci.yml': 'a:\n  stage: nope\n  script: echo\n' });
    const result = await exec(repo, ['--log-level', 'info']);
    expect(result.exitCode, result.all).toBe(2);
    expect(result.stderr).toContain("stage 'nope' is not one of the pipeline's stages");
    expect(result.stderr).toContain('reference server listening');
    expect(result.stderr).not.toContain('process containment');
  });

  it('reads an uncommitted include and applies rules for the current branch', async () => {
    const repo = await makeRepo({ '.gitlab-ci.yml': 'include:\n  - local: ci/jobs.yml\nalways-here:\n  script: echo here\n' });
    await writeFiles(repo, {
      'ci/jobs.yml': 'on-main:\n  script: echo "included and on main"\n  rules:\n    - if: $CI_COMMIT_BRANCH == "main"\nnot-main:\n  script: echo no\n  rules:\n    - if: $CI_COMMIT_BRANCH != "main"\n',
    });
    const listed = await exec(repo, ['--list']);
    expect(listed.exitCode, listed.all).toBe(0);
    expect(listed.stdout).toMatch(/^on-main\s+test/m);
    expect(listed.stdout).not.toMatch(/^not-main/m);
    const other = await exec(repo, ['--list', '--ref', 'topic']);
    expect(other.stdout).toMatch(/^not-main\s+test/m);
    const ran = await exec(repo);
    expect(ran.exitCode, ran.all).toBe(0);
    expect(ran.stdout).toContain('included and on main');
  });
});
