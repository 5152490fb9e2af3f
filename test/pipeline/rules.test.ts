import { describe, expect, it } from 'vitest';
import type { CommitFiles, RuleContext } from '../../src/pipeline/context.js';
import { parsePipeline, readPipeline, PipelineConfigError } from '../../src/pipeline/parse.js';
import { pipelineVariables } from '../../src/pipeline/predefined.js';
import { selectJobs, type PipelinePlan } from '../../src/pipeline/select.js';

/** The files of a commit held in memory; `changed` maps a base to the paths that differ from it. */
function memoryFiles(files: Record<string, string>, changed: Record<string, string[]> = {}): CommitFiles {
  return {
    paths: async () => Object.keys(files),
    read: async (path) => files[path],
    changedSince: async (base) => changed[base],
  };
}

const BEFORE = 'b'.repeat(40);

interface Pipeline {
  ref?: string;
  tag?: boolean;
  source?: RuleContext['source'];
  beforeSha?: string;
  variables?: Record<string, string>;
  files?: CommitFiles;
}

function context(options: Pipeline = {}): RuleContext {
  const ref = options.ref ?? 'main';
  const facts = {
    projectPath: 'group/project',
    ref,
    refSlug: ref,
    tag: options.tag ?? false,
    sha: 'a'.repeat(40),
    beforeSha: options.beforeSha ?? BEFORE,
    source: options.source ?? 'push',
    defaultBranch: 'main',
  };
  return { ...facts, predefined: pipelineVariables(facts), variables: options.variables ?? {}, files: options.files ?? memoryFiles({}) };
}

async function plan(text: string, options: Pipeline = {}): Promise<PipelinePlan> {
  return selectJobs(parsePipeline(text), context(options));
}

async function chosen(text: string, options: Pipeline = {}): Promise<string[]> {
  return (await plan(text, options)).jobs.map((job) => job.name);
}

const RULES = `
build:
  script: x
  rules:
    - if: $CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH
    - if: $CI_COMMIT_BRANCH =~ /^feature\\//
      when: manual
    - if: $CI_COMMIT_TAG
      when: never
release:
  script: x
  rules:
    - if: $CI_COMMIT_TAG =~ /^v\\d+/ && $CI_PIPELINE_SOURCE == "push"
nightly:
  script: x
  rules:
    - if: $CI_PIPELINE_SOURCE == "schedule" || $FORCE_NIGHTLY != null
`;

describe('rules', () => {
  it('picks the first matching rule and leaves out jobs no rule matches', async () => {
    expect(await chosen(RULES)).toEqual(['build']);
    expect(await chosen(RULES, { ref: 'v1.2', tag: true })).toEqual(['release']);
    expect(await chosen(RULES, { ref: 'main', source: 'schedule' })).toEqual(['build', 'nightly']);
    expect(await chosen(RULES, { ref: 'other', variables: { FORCE_NIGHTLY: '1' } })).toEqual(['nightly']);
  });

  it('takes when and allow_failure from the rule, and says which rule decided', async () => {
    const result = await plan(RULES, { ref: 'feature/login' });
    expect(result.jobs.map((job) => [job.name, job.when, job.allowFailure])).toEqual([['build', 'manual', false]]);
    expect(result.outcomes).toEqual([
      { name: 'build', stage: 'test', included: true, when: 'manual', allowFailure: false, reason: 'rules:1 (if: $CI_COMMIT_BRANCH =~ /^feature\\//; when: manual)' },
      { name: 'release', stage: 'test', included: false, when: 'never', allowFailure: false, reason: 'no rule matched' },
      { name: 'nightly', stage: 'test', included: false, when: 'never', allowFailure: false, reason: 'no rule matched' },
    ]);
  });

  it('applies a rule\'s variables, allow_failure and start_in over the job\'s', async () => {
    const text = `
variables: { LEVEL: global }
deploy:
  script: x
  variables: { TARGET: staging }
  allow_failure: true
  rules:
    - if: $CI_COMMIT_BRANCH == "main"
      variables: { TARGET: production }
      allow_failure: false
      when: delayed
      start_in: 30 minutes
    - when: on_success
`;
    const [deploy] = (await plan(text)).jobs;
    expect(deploy?.variables).toEqual([{ key: 'LEVEL', value: 'global' }, { key: 'TARGET', value: 'production' }]);
    expect(deploy?.allowFailure).toBe(false);
    expect(deploy?.when).toBe('delayed');
    expect(deploy?.startIn).toBe(1800);
    const [other] = (await plan(text, { ref: 'dev' })).jobs;
    expect(other?.variables).toEqual([{ key: 'LEVEL', value: 'global' }, { key: 'TARGET', value: 'staging' }]);
    expect(other?.allowFailure).toBe(true);
  });

  it('sees the job\'s own and matrix variables in if:', async () => {
    const text = `
test:
  script: x
  parallel:
    matrix:
      - OS: [linux, windows]
  rules:
    - if: $OS == "linux"
`;
    expect(await chosen(text)).toEqual(['test: [linux]']);
  });

  it('matches changes against the previous commit, with globs, and compare_to', async () => {
    const files = memoryFiles({ 'src/app.ts': '', 'docs/a.md': '' }, { [BEFORE]: ['docs/guide/intro.md'], develop: ['src/app.ts'] });
    const text = `
docs:
  script: x
  rules:
    - changes: ['docs/**/*.md']
code:
  script: x
  rules:
    - changes: ['src/*']
code-vs-develop:
  script: x
  rules:
    - changes: { paths: ['src/*'], compare_to: develop }
`;
    expect(await chosen(text, { files })).toEqual(['docs', 'code-vs-develop']);
    // GitLab: without a push to compare with (web, schedule, a new branch), changes always holds.
    expect(await chosen(text, { files, source: 'web' })).toEqual(['docs', 'code', 'code-vs-develop']);
    expect(await chosen(text, { files, beforeSha: '0'.repeat(40) })).toEqual(['docs', 'code', 'code-vs-develop']);
    await expect(chosen(text.replace('compare_to: develop', 'compare_to: nowhere'), { files })).rejects.toThrow(
      "jobs:code-vs-develop changes:compare_to 'nowhere' is not a branch, tag or commit of the repository",
    );
  });

  it('matches exists against the commit\'s files, dotfiles included', async () => {
    const files = memoryFiles({ 'Dockerfile': '', 'charts/app/Chart.yaml': '', '.nvmrc': '' });
    const text = `
docker: { script: x, rules: [{ exists: [Dockerfile] }] }
helm: { script: x, rules: [{ exists: ['charts/**/Chart.yaml'] }] }
node: { script: x, rules: [{ exists: ['.nvmrc'] }] }
go: { script: x, rules: [{ exists: [go.mod] }] }
`;
    expect(await chosen(text, { files })).toEqual(['docker', 'helm', 'node']);
  });

  it('lets a rule\'s allow_failure replace the job\'s exit_codes, and keeps them under a rule without one', async () => {
    const text = `
ruled: { script: x, allow_failure: { exit_codes: 137 }, rules: [{ allow_failure: false }] }
kept: { script: x, allow_failure: { exit_codes: 137 }, rules: [{ when: always }] }
`;
    const jobs = (await plan(text)).jobs;
    expect(jobs.map((job) => [job.name, job.allowFailure, job.allowFailureExitCodes])).toEqual([
      ['ruled', false, undefined],
      ['kept', false, [137]],
    ]);
  });

  it('lets the matching rule\'s needs replace the job\'s', async () => {
    const text = `
dev: { stage: build, script: x }
prod: { stage: build, script: x }
test:
  script: x
  needs: [dev]
  rules:
    - if: $CI_COMMIT_TAG
      needs: [prod]
    - when: on_success
`;
    const needsOfTest = async (options: Pipeline) => (await plan(text, options)).jobs.find((job) => job.name === 'test')?.needs?.map((need) => need.job);
    expect(await needsOfTest({})).toEqual(['dev']);
    expect(await needsOfTest({ ref: 'v1', tag: true })).toEqual(['prod']);
  });

  it('takes an empty exists entry as naming no file', async () => {
    const files = memoryFiles({ 'Dockerfile': '' });
    expect(await chosen('j: { script: x, rules: [{ exists: [""] }] }\nk: { script: x, rules: [{ exists: ["", Dockerfile] }] }\n', { files })).toEqual(['k']);
  });

  it('refuses an empty rules list, as GitLab does, instead of guessing never or always', () => {
    expect(() => parsePipeline('j: { script: x, rules: [] }\n')).toThrow('jobs:j rules must list at least one rule');
  });

  it('needs every clause of a rule to hold', async () => {
    const files = memoryFiles({ 'Dockerfile': '' });
    const text = 'j:\n  script: x\n  rules:\n    - if: $CI_COMMIT_TAG\n      exists: [Dockerfile]\n    - exists: [nope]\n';
    expect(await chosen(text, { files })).toEqual([]);
    expect(await chosen(text, { files, ref: 'v1', tag: true })).toEqual(['j']);
  });
});

describe('workflow: rules', () => {
  const text = `
workflow:
  rules:
    - if: $CI_COMMIT_MESSAGE =~ /wip/
      when: never
    - if: $CI_COMMIT_TAG
      variables: { DEPLOY_ENV: production }
    - if: $CI_COMMIT_BRANCH
variables: { DEPLOY_ENV: dev }
deploy:
  script: x
  rules:
    - if: $DEPLOY_ENV == "production"
show:
  script: x
`;

  it('keeps the whole pipeline from running when no rule matches or one says never', async () => {
    expect((await plan(text, { source: 'push', variables: { CI_COMMIT_MESSAGE: 'wip: later' } })).run).toBe(false);
    const none = await plan(text.replace('    - if: $CI_COMMIT_BRANCH\n', ''));
    expect(none.run).toBe(false);
    expect(none.workflow).toBe('no workflow rule matched');
  });

  it('passes its variables to job rules and jobs, over the global ones', async () => {
    const tagged = await plan(text, { ref: 'v1', tag: true });
    expect(tagged.workflow).toBe('workflow:rules:1 (if: $CI_COMMIT_TAG)');
    expect(tagged.jobs.map((job) => job.name)).toEqual(['deploy', 'show']);
    expect(tagged.jobs[1]?.variables).toEqual([{ key: 'DEPLOY_ENV', value: 'production' }]);
    expect(await chosen(text)).toEqual(['show']);
  });
});

describe('inherit: variables', () => {
  const text = `
workflow:
  rules:
    - variables: { FROM_WORKFLOW: w }
variables: { A: a, B: b }
none: { script: x, inherit: { variables: false }, variables: { OWN: o } }
some: { script: x, inherit: { variables: [B, FROM_WORKFLOW] } }
all: { script: x }
`;

  it('gives a job only the global and workflow variables it inherits', async () => {
    const jobs = (await plan(text)).jobs;
    const keys = (name: string) => jobs.find((job) => job.name === name)?.variables.map((variable) => variable.key);
    expect(keys('none')).toEqual(['OWN']);
    expect(keys('some')).toEqual(['B', 'FROM_WORKFLOW']);
    expect(keys('all')).toEqual(['A', 'B', 'FROM_WORKFLOW']);
  });
});

describe('only and except', () => {
  const text = `
default-refs: { script: x }
main-only: { script: x, only: [main] }
releases: { script: x, only: ['/^release-.*$/'] }
tags-only: { script: x, only: [tags] }
not-main: { script: x, except: [main] }
scheduled: { script: x, only: [schedules] }
project-main: { script: x, only: ['main@group/project'] }
other-project: { script: x, only: ['main@other/project'] }
vars:
  script: x
  only:
    refs: [branches]
    variables: [$RUN_VARS == "yes"]
except-vars:
  script: x
  except:
    variables: [$SKIP]
changed:
  script: x
  only:
    changes: [src/**/*]
`;

  it('matches names, regexes, keywords and project paths', async () => {
    const files = memoryFiles({}, { [BEFORE]: ['README.md'] });
    expect(await chosen(text, { files })).toEqual(['default-refs', 'main-only', 'project-main', 'except-vars']);
    expect(await chosen(text, { files, ref: 'release-2', variables: { RUN_VARS: 'yes', SKIP: '1' } })).toEqual([
      'default-refs',
      'releases',
      'not-main',
      'vars',
    ]);
    expect(await chosen(text, { files, ref: 'v1', tag: true })).toEqual(['default-refs', 'tags-only', 'not-main', 'except-vars']);
    expect(await chosen(text, { files, source: 'schedule' })).toContain('scheduled');
    const changedFiles = memoryFiles({}, { [BEFORE]: ['src/lib/a.ts'] });
    expect(await chosen(text, { files: changedFiles })).toContain('changed');
  });

  it('says which part decided', async () => {
    const outcomes = (await plan(text, { ref: 'dev', files: memoryFiles({}, { [BEFORE]: [] }) })).outcomes;
    const reason = (name: string) => outcomes.find((outcome) => outcome.name === name)?.reason;
    expect(reason('default-refs')).toBe('default (only: branches, tags)');
    expect(reason('main-only')).toBe('only:refs did not match');
    expect(reason('not-main')).toBe('except did not match');
    expect(reason('vars')).toBe('only:variables did not match');
  });

  it('refuses rules together with only or except', () => {
    expect(() => parsePipeline('j:\n  script: x\n  rules: [{ when: always }]\n  only: [main]\n')).toThrow('jobs:j rules cannot be used together with only or except');
  });
});

describe('manual jobs', () => {
  it('may fail without failing the pipeline when manual by their own when, but not by a rule', async () => {
    const text = 'own:\n  script: x\n  when: manual\nby-rule:\n  script: x\n  rules: [{ when: manual }]\n';
    const jobs = (await plan(text)).jobs;
    expect(jobs.map((job) => [job.name, job.when, job.allowFailure])).toEqual([
      ['own', 'manual', true],
      ['by-rule', 'manual', false],
    ]);
  });
});

describe('dependencies after rules', () => {
  it('refuses a chosen job that takes artifacts from one the rules left out', async () => {
    const text = 'build:\n  stage: build\n  script: x\n  rules: [{ if: $CI_COMMIT_TAG }]\ntest:\n  script: x\n  dependencies: [build]\n';
    await expect(plan(text)).rejects.toThrow("jobs:test dependencies names 'build', which the rules leave out of this pipeline");
  });
});

describe('include: local', () => {
  const files = memoryFiles({
    'ci/base.yml': 'include: ci/shared/vars.yml\n.base:\n  image: alpine\n  script: [base]\nlint:\n  script: lint\n  stage: test\n',
    'ci/shared/vars.yml': 'variables: { FROM_INCLUDE: yes, OVERRIDDEN: include }\n',
    'ci/jobs/a.yml': 'a: { extends: .base }\n',
    'ci/jobs/b.yml': 'b: { extends: .base, script: [b] }\n',
    'ci/loop-1.yml': 'include: ci/loop-2.yml\n',
    'ci/loop-2.yml': 'include: /ci/loop-1.yml\n',
  });
  const read = (text: string) => readPipeline(text, { files, variables: { CI_COMMIT_REF_NAME: 'main' } });

  it('merges nested includes and wildcards under the including file, which wins', async () => {
    const spec = await read(`
include:
  - ci/base.yml
  - local: '/ci/jobs/*.yml'
variables: { OVERRIDDEN: main }
lint:
  script: lint --strict
`);
    expect(spec.jobs.map((job) => job.name)).toEqual(['lint', 'a', 'b']);
    expect(spec.jobs[0]?.commands).toEqual(['lint --strict']);
    expect(spec.jobs[1]).toMatchObject({ image: 'alpine', commands: ['base'] });
    expect(spec.jobs[2]?.commands).toEqual(['b']);
    expect(spec.variables).toEqual([{ key: 'FROM_INCLUDE', value: 'yes' }, { key: 'OVERRIDDEN', value: 'main' }]);
  });

  it('includes a file only when its rules say so', async () => {
    const text = `
include:
  - local: ci/jobs/a.yml
    rules:
      - if: $CI_COMMIT_TAG
  - local: ci/jobs/b.yml
    rules:
      - exists: [ci/base.yml]
  - local: ci/base.yml
`;
    const names = async (options: Pipeline) =>
      (await readPipeline(text, { files, variables: {}, context: context({ ...options, files }) })).jobs.map((job) => job.name);
    expect(await names({})).toEqual(['b', 'lint']);
    expect(await names({ ref: 'v1', tag: true })).toEqual(['a', 'b', 'lint']);
    await expect(readPipeline(text, { files, variables: {} })).rejects.toThrow("include:rules (in the pipeline file) needs the pipeline's ref and files");
  });

  it('counts every include towards GitLab\'s limit of 150, repeats of a file too', async () => {
    const includes = (n: number) => `include:\n${'  - local: ci/jobs/a.yml\n'.repeat(n)}.base: { script: x }\n`;
    expect((await read(includes(150))).jobs.map((job) => job.name)).toEqual(['a']);
    await expect(read(includes(151))).rejects.toThrow('include: more than 150 includes');
  });

  it('refuses cycles, missing files and anything outside the working tree', async () => {
    await expect(read('include: ci/loop-1.yml\nj: { script: x }\n')).rejects.toThrow('include: ci/loop-1.yml → ci/loop-2.yml → ci/loop-1.yml is a cycle');
    await expect(read('include: ci/missing.yml\nj: { script: x }\n')).rejects.toThrow("include: local file 'ci/missing.yml' (from the pipeline file) does not exist");
    await expect(read('include: ../outside.yml\nj: { script: x }\n')).rejects.toThrow('is outside the repository');
    for (const [entry, kind] of [
      ['{ project: group/other, file: ci.yml }', 'project'],
      ['https://example.com/ci.yml', 'remote'],
      ['{ remote: "https://example.com/ci.yml" }', 'remote'],
      ['{ template: Auto-DevOps.gitlab-ci.yml }', 'template'],
      ['{ component: gitlab.com/a/b@1 }', 'component'],
    ]) {
      const error = await read(`include: ${entry}\nj: { script: x }\n`).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(PipelineConfigError);
      expect((error as Error).message).toContain(`include:${kind} (in the pipeline file) is not supported: `);
      expect((error as Error).message).toContain('no network');
    }
  });
});
