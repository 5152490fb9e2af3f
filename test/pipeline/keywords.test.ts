import { describe, expect, it } from 'vitest';
import { parsePipeline, PipelineConfigError, readPipeline } from '../../src/pipeline/parse.js';
import { DEFAULT_KEYWORDS, GLOBAL_KEYWORDS, JOB_KEYWORDS, REPORT_KEYWORDS } from '../../src/pipeline/keywords.js';
import { notAppliedLines } from '../../src/pipeline/keyword-notes.js';
import type { CommitFiles } from '../../src/pipeline/context.js';

function refusal(text: string): PipelineConfigError {
  try {
    parsePipeline(text);
  } catch (error) {
    if (error instanceof PipelineConfigError) return error;
    throw error;
  }
  throw new Error(`expected the pipeline to be refused:\n${text}`);
}

function files(map: Record<string, string>): CommitFiles {
  return { read: async (path) => map[path], paths: async () => Object.keys(map), changedSince: async () => undefined };
}

async function read(text: string, included: Record<string, string> = {}, inputs?: Record<string, unknown>) {
  return readPipeline(text, { files: files(included), variables: { CI_PROJECT_NAME: 'demo' }, ...(inputs ? { inputs } : {}) });
}

async function readRefusal(text: string, included: Record<string, string> = {}): Promise<PipelineConfigError> {
  const error = await read(text, included).catch((caught: unknown) => caught);
  if (error instanceof PipelineConfigError) return error;
  throw new Error(`expected the pipeline to be refused:\n${text}`);
}

describe('the keyword table', () => {
  it("holds every job keyword of GitLab's CI schema", () => {
    const schemaJobKeys = [
      'image', 'services', 'before_script', 'after_script', 'hooks', 'rules', 'variables', 'cache', 'id_tokens', 'identity', 'inputs',
      'secrets', 'script', 'run', 'stage', 'only', 'extends', 'needs', 'except', 'tags', 'allow_failure', 'timeout', 'when', 'start_in',
      'manual_confirmation', 'dependencies', 'artifacts', 'environment', 'release', 'coverage', 'retry', 'parallel', 'interruptible',
      'resource_group', 'trigger', 'inherit', 'publish', 'pages',
    ];
    expect(schemaJobKeys.filter((key) => !Object.hasOwn(JOB_KEYWORDS, key))).toEqual([]);
    expect(['spec', 'image', 'services', 'before_script', 'after_script', 'variables', 'cache', 'default', 'stages', 'include', 'workflow'].filter((key) => !Object.hasOwn(GLOBAL_KEYWORDS, key))).toEqual([]);
    expect(['junit', 'coverage_report', 'codequality', 'sast', 'dotenv', 'cyclonedx', 'terraform', 'repository_xray'].filter((key) => !Object.hasOwn(REPORT_KEYWORDS, key))).toEqual([]);
    expect(Object.keys(DEFAULT_KEYWORDS)).toContain('id_tokens');
  });

  it('accepts what real pipelines use and lists what a local run does not apply, once per keyword', () => {
    const spec = parsePipeline(`
default:
  identity: google_cloud
test:
  script: make test
  secrets:
    DB: { vault: prod/db/password@ops }
  artifacts:
    expose_as: Test report
    access: developer
    reports:
      junit: [report.xml]
      codequality: gl-code-quality.json
      coverage_report: { coverage_format: cobertura, path: coverage.xml }
  environment: { name: review/$CI_COMMIT_REF_SLUG, on_stop: stop, auto_stop_in: 1 day }
  manual_confirmation: sure?
deploy:
  script: make deploy
  secrets:
    TOKEN: { vault: prod/token@ops }
`);
    expect(spec.jobs.map((job) => job.name)).toEqual(['test', 'deploy']);
    expect(spec.jobs[0]?.artifacts?.reports).toEqual({ typed: { junit: ['report.xml'], codequality: ['gl-code-quality.json'], cobertura: ['coverage.xml'] } });
    const notes = notAppliedLines(spec.notApplied ?? []);
    expect(notes.filter((line) => line.startsWith('secrets '))).toEqual([expect.stringMatching(/^secrets \(job test, job deploy\): secrets come from an external secrets manager/)]);
    for (const key of ['default:identity', 'artifacts:expose_as', 'artifacts:access', 'environment:on_stop', 'environment:auto_stop_in', 'manual_confirmation']) {
      expect(notes.some((line) => line.startsWith(`${key} (`)), key).toBe(true);
    }
  });

  it('names only the jobs that run once the rules have chosen them, a parallel job by its name in the file', () => {
    const spec = parsePipeline(`
default:
  identity: google_cloud
build:
  parallel: 2
  script: make
  secrets: { A: { vault: a/b@c } }
deploy:
  script: make deploy
  secrets: { A: { vault: a/b@c } }
  artifacts: { paths: [out], expose_as: Output }
`);
    const build = spec.jobs.filter((job) => job.name.startsWith('build'));
    expect(notAppliedLines(spec.notApplied ?? [], build)).toEqual([
      expect.stringMatching(/^default:identity \(default\): /),
      expect.stringMatching(/^secrets \(job build\): /),
    ]);
    expect(notAppliedLines(spec.notApplied ?? []).find((line) => line.startsWith('secrets'))).toMatch(/^secrets \(job build, job deploy\)/);
  });

  it("refuses keys that are not GitLab's with GitLab's words, all of a job's at once", () => {
    expect(refusal('b:\n  script: x\n  scripts: y\n  artefacts: {}\n').message).toBe('jobs:b config contains unknown keys: scripts, artefacts');
    expect(refusal('workflow: { rulez: [] }\nb: { script: x }\n').message).toContain('workflow config contains unknown keys: rulez');
  });

  it('reads resource_group, id_tokens, pages, retry exit codes, workflow name and auto_cancel, and rules:interruptible', () => {
    const spec = parsePipeline(`
workflow:
  name: 'Nightly $CI_COMMIT_REF_NAME'
  auto_cancel: { on_new_commit: interruptible, on_job_failure: all }
deploy:
  script: x
  resource_group: production
  id_tokens:
    VAULT_ID_TOKEN: { aud: https://vault.example.com }
    OTHER: { aud: [a, b] }
  retry: { max: 2, exit_codes: [137, 255] }
pages:
  script: x
  artifacts: { paths: [docs] }
site:
  script: x
  pages: { publish: build/site/ }
t:
  script: x
  rules:
    - if: $CI_COMMIT_BRANCH
      interruptible: true
`);
    const byName = new Map(spec.jobs.map((job) => [job.name, job]));
    expect(byName.get('deploy')).toMatchObject({ resourceGroup: 'production', idTokens: [{ name: 'VAULT_ID_TOKEN', aud: 'https://vault.example.com' }, { name: 'OTHER', aud: ['a', 'b'] }], retry: { max: 2, when: [], exitCodes: [137, 255] } });
    expect(byName.get('pages')).toMatchObject({ pages: { publish: 'public' }, artifacts: { paths: ['docs', 'public'] } });
    expect(byName.get('site')).toMatchObject({ pages: { publish: 'build/site' }, artifacts: { paths: ['build/site'] } });
    expect(spec.name).toBe('Nightly $CI_COMMIT_REF_NAME');
    expect(spec.autoCancel).toEqual({ onNewCommit: 'interruptible', onJobFailure: 'all' });
    expect(spec.conditions.t?.rules?.[0]?.interruptible).toBe(true);
  });

  it('accepts dependencies on a job of the same stage, with needs ordering them or without (GitLab 14.2+)', () => {
    const spec = parsePipeline('b:\n  script: x\na:\n  script: x\n  dependencies: [b]\nc:\n  script: x\n  needs: [b]\n  dependencies: [b]\n');
    expect(spec.jobs.map((job) => [job.name, job.dependencies])).toEqual([['b', undefined], ['a', ['b']], ['c', ['b']]]);
  });

  it('skips an empty needs entry that an anchor nests, and refuses one written in the list itself', () => {
    const spec = parsePipeline('.none: &none\n  -\na:\n  script: x\nb:\n  script: x\n  needs:\n    - *none\n    - a\n');
    expect(spec.jobs[1]?.needs).toEqual([{ job: 'a', artifacts: true, optional: false }]);
    expect(refusal('a:\n  script: x\nb:\n  script: x\n  needs:\n    - ~\n').message).toContain('jobs:b needs:0 must be a job name or a map with job');
  });

  it('runs the script steps of run: as commands, and fails a step it cannot run saying why', () => {
    const spec = parsePipeline(`
steps:
  run:
    - name: hello
      script: echo hello
    - name: with_env
      env: { WHO: you }
      script: echo $WHO
    - name: remote
      step: gitlab.com/components/echo@v1
`);
    expect(spec.jobs[0]?.commands).toEqual(['echo hello', "(export WHO='you'; echo $WHO)", "echo 'step remote (step:) is not run locally: it needs GitLab'\\''s step runner' >&2; exit 1"]);
  });
});

describe('spec: inputs', () => {
  const template = `spec:
  inputs:
    stage:
      default: test
    job-prefix:
    parallel:
      type: number
      default: 1
    verbose:
      type: boolean
      default: false
    env:
      options: [dev, prod]
      default: dev
    version:
      regex: ^v\\d+$
      default: v1
---
"$[[ inputs.job-prefix ]]-lint":
  stage: $[[ inputs.stage ]]
  parallel: $[[ inputs.parallel ]]
  variables:
    VERBOSE: $[[ inputs.verbose ]]
    ENV: "$[[ inputs.env ]] at $[[ inputs.version | truncate(1,5) ]]"
  script: echo $[[ inputs.job-prefix | posix_escape ]] $[[ inputs.stage | expand_vars ]]
`;

  it('interpolates included files with their inputs, keeping types where a block is the whole value', async () => {
    const spec = await read(`include:\n  - local: lint.yml\n    inputs: { job-prefix: "my app", parallel: 2, verbose: true }\n`, { 'lint.yml': template });
    expect(spec.jobs.map((job) => job.name)).toEqual(['my app-lint 1/2', 'my app-lint 2/2']);
    expect(spec.jobs[0]?.stage).toBe('test');
    expect(spec.jobs[0]?.variables).toEqual([{ key: 'VERBOSE', value: 'true' }, { key: 'ENV', value: 'dev at 1' }]);
    expect(spec.jobs[0]?.commands).toEqual(['echo my\\ app test']);
  });

  it('includes one template twice with other inputs', async () => {
    const spec = await read(`include:\n  - local: lint.yml\n    inputs: { job-prefix: a }\n  - local: lint.yml\n    inputs: { job-prefix: b }\n`, { 'lint.yml': template });
    expect(spec.jobs.map((job) => job.name)).toEqual(['a-lint 1/1', 'b-lint 1/1']);
  });

  it("refuses missing, unknown, mistyped and disallowed inputs with GitLab's errors", async () => {
    const include = (inputs: string) => `include:\n  - local: lint.yml\n    inputs: ${inputs}\n`;
    expect((await readRefusal(include('{ stage: x }'), { 'lint.yml': template })).message).toBe('lint.yml: `job-prefix` input: required value has not been provided');
    expect((await readRefusal(include('{ job-prefix: a, nope: 1 }'), { 'lint.yml': template })).message).toBe('lint.yml: unknown input arguments: nope');
    expect((await readRefusal(include('{ job-prefix: a, parallel: two }'), { 'lint.yml': template })).message).toBe('lint.yml: `parallel` input: provided value is not a number');
    expect((await readRefusal(include('{ job-prefix: a, env: staging }'), { 'lint.yml': template })).message).toBe('lint.yml: `env` input: `staging` cannot be used because it is not in the list of allowed options');
    expect((await readRefusal(include('{ job-prefix: a, version: "1.0" }'), { 'lint.yml': template })).message).toBe('lint.yml: `version` input: provided value does not match required RegEx pattern');
    expect((await readRefusal('include: plain.yml\n', { 'plain.yml': 'j:\n  script: $[[ inputs.nope ]]\n' }).catch(() => undefined)) ?? 'no error').toBe('no error');
    expect((await readRefusal(include('{ a: 1 }'), { 'lint.yml': 'j: { script: x }\n' })).message).toContain('given inputs not defined in the `spec` section');
    const unknownKey = 'spec:\n  inputs:\n    a:\n      default: x\n---\nj:\n  script: echo $[[ inputs.b ]]\n';
    expect((await readRefusal('include: t.yml\n', { 't.yml': unknownKey })).message).toBe('t.yml: interpolation interrupted by errors, unknown interpolation key: `b`');
  });

  it('reads the pipeline file\'s own header, with defaults or the values given', async () => {
    const text = 'spec:\n  inputs:\n    target: { default: all }\n---\nbuild:\n  script: make $[[ inputs.target ]]\n';
    expect((await read(text)).jobs[0]?.commands).toEqual(['make all']);
    expect((await read(text, {}, { target: 'docs' })).jobs[0]?.commands).toEqual(['make docs']);
  });

  it("leaves $[[ matrix.NAME ]] to needs:parallel:matrix", async () => {
    const text = 'spec:\n  inputs:\n    p: { default: aws }\n---\nbuild:\n  script: x\n  parallel: { matrix: [{ P: ["$[[ inputs.p ]]", gcp] }] }\ntest:\n  script: x\n  parallel: { matrix: [{ P: [aws, gcp] }] }\n  needs: [{ job: build, parallel: { matrix: [{ P: "$[[ matrix.P ]]" }] } }]\n';
    const spec = await read(text);
    expect(spec.jobs.find((job) => job.name === 'test: [aws]')?.needs).toEqual([{ job: 'build: [aws]', artifacts: true, optional: false }]);
  });

  it('refuses include: component offline, saying what to do', async () => {
    const error = await readRefusal('include:\n  - component: $CI_SERVER_FQDN/group/components/lint@1.0\n    inputs: { stage: test }\n');
    expect(error.message).toContain('include:component (in the pipeline file) is not supported: CI/CD components are fetched from a GitLab instance');
    expect(error.message).toContain('use include: local with inputs');
  });
});
