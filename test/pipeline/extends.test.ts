import { describe, expect, it } from 'vitest';
import { parsePipeline, PipelineConfigError } from '../../src/pipeline/parse.js';
import type { JobSpec } from '../../src/pipeline/spec.js';

function job(text: string, name: string): JobSpec {
  const found = parsePipeline(text).jobs.find((candidate) => candidate.name === name);
  if (found === undefined) throw new Error(`no job ${name} in ${parsePipeline(text).jobs.map((j) => j.name).join(', ')}`);
  return found;
}

function refusal(text: string): PipelineConfigError {
  try {
    parsePipeline(text);
  } catch (error) {
    expect(error).toBeInstanceOf(PipelineConfigError);
    return error as PipelineConfigError;
  }
  throw new Error('expected a refusal');
}

describe('extends', () => {
  it('deep-merges maps through a multi-level chain, replacing lists, the job winning', () => {
    const text = `
.base:
  image: ruby:3
  variables: { A: base, B: base }
  script: [base]
  artifacts: { paths: [base/], expire_in: 1 week }
.tested:
  extends: .base
  variables: { B: tested, C: tested }
  artifacts: { paths: [tested/] }
unit:
  extends: .tested
  variables: { C: unit }
  script: [rspec]
`;
    const unit = job(text, 'unit');
    expect(unit.image).toBe('ruby:3');
    expect(unit.commands).toEqual(['rspec']);
    expect(unit.variables).toEqual([
      { key: 'A', value: 'base' },
      { key: 'B', value: 'tested' },
      { key: 'C', value: 'unit' },
    ]);
    expect(unit.artifacts).toEqual({ paths: ['tested/'], expire_in: '1 week' });
  });

  it('merges several bases in the order listed, and may extend a visible job', () => {
    const text = `
.a: { stage: build, variables: { X: a } }
.b: { variables: { X: b, Y: b } }
compile:
  extends: [.a, .b]
  script: make
again:
  extends: compile
  script: make again
`;
    expect(job(text, 'compile').stage).toBe('build');
    expect(job(text, 'compile').variables).toEqual([{ key: 'X', value: 'b' }, { key: 'Y', value: 'b' }]);
    expect(job(text, 'again').stage).toBe('build');
    expect(job(text, 'again').commands).toEqual(['make again']);
  });

  it('refuses cycles and missing bases, naming each job', () => {
    const error = refusal(`
a: { extends: b, script: x }
b: { extends: a, script: x }
c: { extends: .nowhere, script: x }
`);
    expect(error.message).toContain('jobs:a extends forms a cycle: a → b → a');
    expect(error.message).toContain("jobs:c extends '.nowhere', which is not a job or hidden job");
    expect(error.problems.map((p) => p.job)).toEqual(expect.arrayContaining(['a', 'c']));
  });

  it('refuses chains deeper than GitLab\'s 11 levels', () => {
    const chain = Array.from({ length: 13 }, (_, i) => `.l${i}: { extends: .l${i + 1} }`).join('\n');
    expect(refusal(`${chain}\n.l13: { script: x }\nj: { extends: .l0 }\n`).message).toContain('nests deeper than 11 levels');
  });
});

describe('default and the old global keys', () => {
  it('gives jobs default: keys they do not set, whole (not merged)', () => {
    const text = `
default:
  image: node:20
  before_script: [npm ci]
  tags: [docker]
  artifacts: { paths: [dist/] }
  timeout: 10m
build:
  script: npm run build
own:
  image: node:22
  tags: []
  artifacts: { when: always }
  script: x
`;
    const build = job(text, 'build');
    expect(build.image).toBe('node:20');
    expect(build.commands).toEqual(['npm ci', 'npm run build']);
    expect(build.tags).toEqual(['docker']);
    expect(build.artifacts).toEqual({ paths: ['dist/'] });
    expect(build.timeout).toBe(600);
    const own = job(text, 'own');
    expect(own.image).toBe('node:22');
    expect(own.tags).toEqual([]);
    expect(own.artifacts).toEqual({ when: 'always' });
  });

  it('lets inherit: turn defaults and global variables off, wholly or by name', () => {
    const text = `
variables: { A: a, B: b }
default: { image: alpine, before_script: [setup] }
none:
  inherit: { default: false, variables: false }
  script: x
some:
  inherit: { default: [image], variables: [B] }
  script: x
`;
    expect(job(text, 'none').image).toBeUndefined();
    expect(job(text, 'none').commands).toEqual(['x']);
    expect(job(text, 'none').variables).toEqual([]);
    expect(job(text, 'some').image).toBe('alpine');
    expect(job(text, 'some').commands).toEqual(['x']);
    expect(job(text, 'some').variables).toEqual([{ key: 'B', value: 'b' }]);
  });

  it('refuses a key set both at the top level and in default:, and default keys jobs cannot take', () => {
    const error = refusal('image: a\ndefault: { image: b, stage: test }\nj: { script: x }\n');
    expect(error.message).toContain('image is set both at the top level and in default:');
    expect(error.message).toContain('default config contains unknown keys: stage');
  });
});

describe('default: with the runtime keys', () => {
  it('gives jobs default: retry and interruptible, and names default: when they are wrong', () => {
    const text = 'default: { retry: 1, interruptible: true }\nj: { script: x }\nown: { script: x, retry: 0, interruptible: false }\n';
    expect([job(text, 'j').retry, job(text, 'j').interruptible]).toEqual([{ max: 1, when: ['always'] }, true]);
    expect([job(text, 'own').retry, job(text, 'own').interruptible]).toEqual([{ max: 0, when: ['always'] }, false]);
    const error = refusal('default: { retry: 5, interruptible: maybe }\nj: { script: x }\n');
    expect(error.problems.map((problem) => problem.message)).toEqual(['default:retry must be 0, 1 or 2', 'default:interruptible must be true or false']);
  });
});

describe('!reference', () => {
  it('copies scripts, variables and rules from other jobs, nested lists flattened', () => {
    const text = `
.setup:
  script: [apt-get update, apt-get install -y make]
  variables: { MODE: fast }
.rules:
  rules:
    - if: $CI_COMMIT_TAG
build:
  script:
    - !reference [.setup, script]
    - make
  variables: !reference [.setup, variables]
  rules:
    - !reference [.rules, rules]
    - when: manual
`;
    const spec = parsePipeline(text);
    const build = spec.jobs[0];
    expect(build?.commands).toEqual(['apt-get update', 'apt-get install -y make', 'make']);
    expect(build?.variables).toEqual([{ key: 'MODE', value: 'fast' }]);
    expect(spec.conditions.build?.rules?.map((rule) => rule.if?.text ?? rule.when)).toEqual(['$CI_COMMIT_TAG', 'manual']);
  });

  it('sees what extends merged, and refuses a reference to nothing', () => {
    expect(job('.a: { script: [one] }\n.b: { extends: .a }\nj:\n  script: !reference [.b, script]\n', 'j').commands).toEqual(['one']);
    expect(refusal('j:\n  script: !reference [.missing, script]\n').message).toContain(
      "jobs:j !reference [.missing, script] points at nothing: '.missing' is not defined there",
    );
    expect(refusal('j:\n  script: !reference { a: b }\n').message).toContain('invalid YAML');
  });
});

describe('parallel', () => {
  it('makes N copies named job i/N, each with its node index', () => {
    const spec = parsePipeline('rspec:\n  parallel: 3\n  script: rspec\n');
    expect(spec.jobs.map((j) => j.name)).toEqual(['rspec 1/3', 'rspec 2/3', 'rspec 3/3']);
    expect(spec.jobs.map((j) => j.parallel)).toEqual([
      { name: 'rspec', index: 1, total: 3 },
      { name: 'rspec', index: 2, total: 3 },
      { name: 'rspec', index: 3, total: 3 },
    ]);
  });

  it('expands a matrix into every combination, named as GitLab names them, with its variables', () => {
    const text = `
variables: { PROVIDER: none, KEEP: yes }
deploy:
  stage: deploy
  script: deploy
  parallel:
    matrix:
      - PROVIDER: aws
        STACK: [monitoring, app1]
      - PROVIDER: [gcp, vultr]
        STACK: data
`;
    const jobs = parsePipeline(text).jobs;
    expect(jobs.map((j) => j.name)).toEqual([
      'deploy: [aws, monitoring]',
      'deploy: [aws, app1]',
      'deploy: [gcp, data]',
      'deploy: [vultr, data]',
    ]);
    expect(jobs[1]?.variables).toEqual([
      { key: 'KEEP', value: 'yes' },
      { key: 'PROVIDER', value: 'aws' },
      { key: 'STACK', value: 'app1' },
    ]);
    expect(jobs[3]?.parallel).toEqual({ name: 'deploy', index: 4, matrix: { PROVIDER: 'vultr', STACK: 'data' }, total: 4 });
  });

  it('points dependencies on a parallel job at all its copies', () => {
    const spec = parsePipeline('build:\n  stage: build\n  parallel: 2\n  script: x\ntest:\n  dependencies: [build]\n  script: x\n');
    expect(spec.jobs.find((j) => j.name === 'test')?.dependencies).toEqual(['build 1/2', 'build 2/2']);
  });

  it('refuses a bad count and a matrix over the limit', () => {
    expect(refusal('j:\n  parallel: 0\n  script: x\n').message).toContain('jobs:j parallel must be a whole number from 1 to 200');
    const values = Array.from({ length: 15 }, (_, i) => `v${i}`).join(', ');
    expect(refusal(`j:\n  script: x\n  parallel:\n    matrix:\n      - { A: [${values}], B: [${values}] }\n`).message).toContain('makes 225 jobs');
  });
});

describe('every problem of a file is reported', () => {
  it('lists each job and key at fault, several per job, in one error', () => {
    const error = refusal(`
stages: [build, test]
build:
  stage: build
  script: make
  tags: [1]
  timeout: forever
  retry_later: 2
test:
  stage: lint
  script: x
  rules:
    - if: $A ==
    - when: sometimes
deploy:
  only: [main]
`);
    expect(error.code).toBe('PIPELINE_INVALID');
    expect(error.problems.map((p) => `${p.job} ${p.key}`)).toEqual([
      'build retry_later',
      'build tags',
      'build timeout',
      'test rules:0:if',
      'test rules:1:when',
      'deploy script',
    ]);
    expect(error.message).toMatch(/^the pipeline has 6 problems:\n- jobs:build config contains unknown keys: retry_later/);
    expect(error.message).toContain('- jobs:test rules:0:if \'$A ==\' is not a valid expression');
  });

  it('checks stages once the jobs read cleanly', () => {
    const error = refusal('a: { stage: one, script: x }\nb: { stage: two, script: x }\n');
    expect(error.problems.map((p) => p.job)).toEqual(['a', 'b']);
  });
});

describe('stages', () => {
  it('has .pre and .post around the listed stages', () => {
    const spec = parsePipeline('stages: [build]\nlast: { stage: .post, script: x }\nfirst: { stage: .pre, script: x }\nb: { stage: build, script: x }\n');
    expect(spec.stages).toEqual(['.pre', 'build', '.post']);
  });
});
