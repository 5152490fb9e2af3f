/** `exec` on what real pipelines do: tagged jobs, child pipelines, the default branch, warnings, the command line. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli } from './cli.js';
import { git, makeRepo, removeTempDirs, tempDir, writeFiles } from './exec-helpers.js';

let state: string;

beforeAll(async () => {
  state = await tempDir('state');
});
afterAll(removeTempDirs);

function exec(repo: string, args: string[] = []) {
  return cli(['exec', '--color=false', ...args], { cwd: repo, env: { XDG_STATE_HOME: state } });
}

describe('exec runs every job', () => {
  it('runs tagged jobs, as the machine they run on, instead of waiting for a runner with the tags', async () => {
    const repo = await makeRepo({ '.gitlab-ci.yml': 'a:\n  tags: [docker, linux]\n  script: [echo "tagged ran"]\nb:\n  script: [echo untagged]\n' });
    const result = await exec(repo);
    expect(result.exitCode, result.all).toBe(0);
    expect(result.stdout).toContain('tagged ran');
    expect(result.stdout).toMatch(/^a\s+test\s+success/m);
  });

  it('reads a job name after -v NAME=value as a job, not as a second variable', async () => {
    const repo = await makeRepo({ '.gitlab-ci.yml': 'build:\n  script: [echo "A=$A"]\nother:\n  script: [echo other]\n' });
    const result = await exec(repo, ['-v', 'A=1', 'build']);
    expect(result.exitCode, result.all).toBe(0);
    expect(result.stdout).toContain('A=1');
    expect(result.stdout).not.toMatch(/^other\s/m);
  });

  it('warns about a key written twice and runs with the last one, as GitLab does', async () => {
    const repo = await makeRepo({ '.gitlab-ci.yml': 'job:\n  script: [echo first]\njob:\n  script: [echo second]\n' });
    const result = await exec(repo);
    expect(result.exitCode, result.all).toBe(0);
    expect(result.stdout).toContain("warning: the pipeline file: key 'job' is written twice in one map (line 3); the last one is used");
    expect(result.stdout).toMatch(/^second$/m);
  });
});

describe('exec with trigger jobs', () => {
  it('runs a child pipeline from a local file, and one a job generated, in the same run', async () => {
    const repo = await makeRepo({
      '.gitlab-ci.yml': `
stages: [build, test]
generate:
  stage: build
  script:
    - |
      printf 'generated:\\n  script: [echo "from the generated child"]\\n' > child.yml
  artifacts: { paths: [child.yml] }
local-child:
  stage: test
  variables: { GREETING: hello }
  trigger: { include: ci/child.yml, strategy: depend }
generated-child:
  stage: test
  trigger:
    include: [{ artifact: child.yml, job: generate }]
`,
      'ci/child.yml': 'child-job:\n  script: [echo "child says $GREETING from $CI_PIPELINE_SOURCE"]\n',
    });
    const result = await exec(repo);
    expect(result.exitCode, result.all).toBe(0);
    expect(result.stdout).toContain('child says hello from parent_pipeline');
    expect(result.stdout).toContain('from the generated child');
    expect(result.stdout).toMatch(/^local-child » child-job\s+test\s+success/m);
    expect(result.stdout).toMatch(/^generated-child » generated\s+test\s+success/m);
  });

  it('fails the pipeline with a failing child pipeline under strategy: depend, and names it', async () => {
    const repo = await makeRepo({
      '.gitlab-ci.yml': 'up:\n  trigger: { include: child.yml, strategy: depend }\n',
      'child.yml': 'down:\n  script: [exit 3]\n',
    });
    const result = await exec(repo);
    expect(result.exitCode, result.all).toBe(1);
    expect(result.stdout).toMatch(/^up\s+test\s+failed/m);
    expect(result.stdout).toContain('child pipeline #2 (from trigger job up) failed');
  });

  it('skips a multi-project trigger with a note saying why', async () => {
    const repo = await makeRepo({ '.gitlab-ci.yml': 'other:\n  trigger: { project: group/other, branch: main }\nmine:\n  script: [echo mine]\n' });
    const result = await exec(repo);
    expect(result.exitCode, result.all).toBe(0);
    expect(result.stdout).toContain("Trigger job other skipped: it triggers a pipeline of another project (group/other, branch main); this server runs this project's pipelines only.");
    expect(result.stdout).toMatch(/^other\s+test\s+skipped/m);
  });
});

describe('exec and the commit it runs', () => {
  it('gives the previous commit as CI_COMMIT_BEFORE_SHA: HEAD\'s parent for a clean tree, HEAD for a snapshot of changes', async () => {
    const repo = await makeRepo({ '.gitlab-ci.yml': 'show:\n  script: [echo "before=$CI_COMMIT_BEFORE_SHA"]\n  rules:\n    - if: $CI_COMMIT_MESSAGE =~ /second|working tree/\n' });
    const first = (await git(repo, ['rev-parse', 'HEAD'])).trim();
    await git(repo, ['commit', '-q', '--allow-empty', '-m', 'second']);
    const second = (await git(repo, ['rev-parse', 'HEAD'])).trim();
    expect((await exec(repo)).stdout).toContain(`before=${first}`);
    await writeFiles(repo, { 'new.txt': 'an uncommitted file\n' });
    expect((await exec(repo)).stdout).toContain(`before=${second}`);
  });
});

describe('exec and the default branch', () => {
  const PIPELINE = 'show:\n  script: [echo "default=$CI_DEFAULT_BRANCH branch=$CI_COMMIT_BRANCH"]\n';

  it('takes CI_DEFAULT_BRANCH from origin/HEAD, else from init.defaultBranch, not from the branch being run', async () => {
    const repo = await makeRepo({ '.gitlab-ci.yml': PIPELINE });
    await git(repo, ['checkout', '-q', '-b', 'feature']);
    await git(repo, ['config', 'init.defaultBranch', 'trunk']);
    expect((await exec(repo)).stdout).toContain('default=trunk branch=feature');
    await git(repo, ['update-ref', 'refs/remotes/origin/develop', 'HEAD']);
    await git(repo, ['symbolic-ref', 'refs/remotes/origin/HEAD', 'refs/remotes/origin/develop']);
    expect((await exec(repo)).stdout).toContain('default=develop branch=feature');
  });
});
