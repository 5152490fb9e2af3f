import fc from 'fast-check';
import { stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import { parsePipeline, PipelineConfigError } from '../../src/pipeline/parse.js';
import { parseDurationSeconds } from '../../src/util/duration.js';

const parseDuration = (text: string): number | undefined => {
  const seconds = parseDurationSeconds(text);
  return seconds !== undefined && seconds > 0 ? Math.round(seconds) : undefined;
};
import { hasCode } from '../../src/util/errors.js';

/** Parses `text` expecting a refusal, and returns the error for inspection. */
function refusal(text: string): PipelineConfigError {
  try {
    parsePipeline(text);
  } catch (error) {
    expect(error).toBeInstanceOf(PipelineConfigError);
    expect(hasCode(error, 'PIPELINE_INVALID')).toBe(true);
    return error as PipelineConfigError;
  }
  throw new Error(`expected the pipeline to be refused:\n${text}`);
}

function job(text: string, name: string) {
  const found = parsePipeline(text).jobs.find((candidate) => candidate.name === name);
  if (found === undefined) throw new Error(`no job ${name}`);
  return found;
}

describe('parsePipeline: jobs and stages', () => {
  it('uses the default stages build, test, deploy and puts jobs in test by default', () => {
    const spec = parsePipeline('unit:\n  script: npm test\n');
    expect(spec.stages).toEqual(['build', 'test', 'deploy']);
    expect(spec.jobs).toEqual([
      {
        name: 'unit',
        stage: 'test',
        commands: ['npm test'],
        afterScript: [],
        variables: [],
        services: [],
        tags: [],
        when: 'on_success',
        allowFailure: false,
      },
    ]);
  });

  it('keeps declared stages and file order of jobs', () => {
    const spec = parsePipeline(`
stages: [compile, check, ship]
ship:
  stage: ship
  script: ./ship
compile:
  stage: compile
  script: [make]
check:
  stage: check
  script: make check
`);
    expect(spec.stages).toEqual(['compile', 'check', 'ship']);
    expect(spec.jobs.map((j) => `${j.name}@${j.stage}`)).toEqual(['ship@ship', 'compile@compile', 'check@check']);
  });

  it('accepts the old names types (for stages) and type (for stage)', () => {
    const spec = parsePipeline('types: [a, b]\nx:\n  type: b\n  script: echo\n');
    expect(spec.stages).toEqual(['a', 'b']);
    expect(spec.jobs[0]?.stage).toBe('b');
  });

  it('ignores hidden jobs but lets anchors and merge keys reuse them', () => {
    const spec = parsePipeline(`
.defaults: &defaults
  stage: build
  tags: [linux]
  variables:
    MODE: fast
.setup: &setup
  - echo setup
compile:
  <<: *defaults
  before_script: *setup
  script:
    - make
`);
    expect(spec.jobs).toHaveLength(1);
    const compile = spec.jobs[0]!;
    expect(compile.name).toBe('compile');
    expect(compile.stage).toBe('build');
    expect(compile.tags).toEqual(['linux']);
    expect(compile.variables).toEqual([{ key: 'MODE', value: 'fast' }]);
    expect(compile.commands).toEqual(['echo setup', 'make']);
  });

  it('merges several anchors with <<: [*a, *b], the first one winning', () => {
    const compile = job(
      `
.a: &a { stage: build, when: manual }
.b: &b { stage: deploy, allow_failure: true }
compile:
  <<: [*a, *b]
  script: make
`,
      'compile',
    );
    expect(compile.stage).toBe('build');
    expect(compile.when).toBe('manual');
    expect(compile.allowFailure).toBe(true);
  });

  it('flattens one level of nested script lists', () => {
    const text = `
.steps: &steps [one, two]
x:
  script:
    - *steps
    - three
`;
    expect(job(text, 'x').commands).toEqual(['one', 'two', 'three']);
  });
});

describe('parsePipeline: scripts and inherited defaults', () => {
  const text = `
image: alpine:3
services: [postgres:15]
before_script: [echo global-before]
after_script: echo global-after
cache:
  key: global
  paths: [vendor/]
variables:
  A: "1"
  B: two
  PORT: 8080
plain:
  script: run
own:
  image: { name: debian:12 }
  services:
    - redis:7
    - name: mysql:8
      alias: db
  before_script: [echo own-before]
  after_script: []
  cache: { key: own, untracked: true }
  variables:
    B: overridden
    C: three
  script:
    - run one
    - run two
`;

  it('gives a job the global before_script, after_script, image, services, cache and variables', () => {
    const plain = job(text, 'plain');
    expect(plain.commands).toEqual(['echo global-before', 'run']);
    expect(plain.afterScript).toEqual(['echo global-after']);
    expect(plain.image).toBe('alpine:3');
    expect(plain.services).toEqual(['postgres:15']);
    expect(plain.cache).toEqual([{ key: 'global', paths: ['vendor/'] }]);
    expect(plain.variables).toEqual([
      { key: 'A', value: '1' },
      { key: 'B', value: 'two' },
      { key: 'PORT', value: '8080' },
    ]);
  });

  it("lets a job's own keys replace the globals, job variables winning over global ones", () => {
    const own = job(text, 'own');
    expect(own.commands).toEqual(['echo own-before', 'run one', 'run two']);
    expect(own.afterScript).toEqual([]);
    expect(own.image).toBe('debian:12');
    expect(own).not.toHaveProperty('imageEntrypoint');
    expect(own.services).toEqual(['redis:7', 'mysql:8']);
    expect(own.cache).toEqual([{ key: 'own', untracked: true }]);
    expect(own.variables).toEqual([
      { key: 'A', value: '1' },
      { key: 'PORT', value: '8080' },
      { key: 'B', value: 'overridden' },
      { key: 'C', value: 'three' },
    ]);
  });

  it('gives each job its own copies of inherited lists (a consumer may mutate one)', () => {
    const spec = parsePipeline('variables: { A: x }\nbefore_script: [b]\nservices: [s]\none:\n  script: s\ntwo:\n  script: s\n');
    const [one, two] = [spec.jobs[0]!, spec.jobs[1]!];
    one.variables.push({ key: 'Z', value: 'z' });
    one.variables[0]!.value = 'changed';
    one.services.push('other');
    one.commands.push('more');
    expect(two.variables).toEqual([{ key: 'A', value: 'x' }]);
    expect(two.services).toEqual(['s']);
    expect(two.commands).toEqual(['b', 's']);
  });

  it('accepts the {value, description} form of a variable', () => {
    expect(job('variables:\n  X: { value: "v", description: "d" }\nj:\n  script: s\n', 'j').variables).toEqual([
      { key: 'X', value: 'v' },
    ]);
  });

  it('reads expand: false as a raw value and checks a value against its options', () => {
    const text = 'variables:\n  R: { value: "$HOME", expand: false }\n  E: { value: "$HOME", expand: true, options: ["$HOME", x] }\nj:\n  script: s\n';
    expect(job(text, 'j').variables).toEqual([{ key: 'R', value: '$HOME', raw: true }, { key: 'E', value: '$HOME' }]);
    expect(() => parsePipeline('variables:\n  V: { value: a, options: [b, c] }\nj: { script: s }\n')).toThrow("variables:V:value 'a' is not one of its options (b, c)");
  });

  it('takes a variable written without a value as empty', () => {
    expect(job('variables:\n  G:\nj:\n  script: s\n  variables:\n    J:\n', 'j').variables).toEqual([
      { key: 'G', value: '' },
      { key: 'J', value: '' },
    ]);
  });
});

describe('parsePipeline: artifacts, cache, dependencies and options', () => {
  const text = `
stages: [build, test, deploy]
build:
  stage: build
  script: make
  artifacts:
    name: bin-$CI_BUILD_REF_NAME
    paths: [dist/, "reports/*.xml"]
    untracked: false
    when: always
    expire_in: 1 week
lint:
  stage: build
  script: lint
unit:
  stage: test
  script: test
  dependencies: [build]
  tags: [docker, linux]
  when: on_failure
  allow_failure: true
  timeout: 1h 30m
deploy:
  stage: deploy
  script: ship
  dependencies: []
  when: manual
  timeout: 600
`;

  it('reads every artifacts key', () => {
    expect(job(text, 'build').artifacts).toEqual({
      name: 'bin-$CI_BUILD_REF_NAME',
      paths: ['dist/', 'reports/*.xml'],
      untracked: false,
      when: 'always',
      expire_in: '1 week',
    });
  });

  it('tells absent dependencies (all earlier jobs) from an empty list (none)', () => {
    expect(job(text, 'lint').dependencies).toBeUndefined();
    expect(job(text, 'unit').dependencies).toEqual(['build']);
    expect(job(text, 'deploy').dependencies).toEqual([]);
  });

  it('reads tags, when, allow_failure and timeouts in seconds', () => {
    const unit = job(text, 'unit');
    expect(unit.tags).toEqual(['docker', 'linux']);
    expect(unit.when).toBe('on_failure');
    expect(unit.allowFailure).toBe(true);
    expect(unit.timeout).toBe(5400);
    expect(job(text, 'deploy').timeout).toBe(600);
    expect(job(text, 'deploy').when).toBe('manual');
    expect(job(text, 'lint').timeout).toBeUndefined();
  });

  it('accepts a job with an empty artifacts map and a number cache key', () => {
    const j = job('j:\n  script: s\n  artifacts: {}\n  cache: { key: 42 }\n', 'j');
    expect(j.artifacts).toEqual({});
    expect(j.cache).toEqual([{ key: '42' }]);
  });
});

describe('parsePipeline: refusals name the job and the key', () => {
  it.each([
    ['artifacts:paths is a string', 'test:unit:\n  script: x\n  artifacts:\n    paths: dist/\n', 'jobs:test:unit artifacts:paths must be a list of strings'],
    ['script missing', 'build:\n  stage: build\n', 'jobs:build script is missing'],
    ['script empty list', 'build:\n  script: []\n', 'jobs:build script must contain at least one command'],
    ['script is a map', 'build:\n  script: { a: 1 }\n', 'jobs:build script must be a string or a list of strings'],
    ['a script line YAML read as a map', 'build:\n  script:\n    - echo ok\n    - echo "Coverage: 87%"\n', 'jobs:build script must be a string or a list of strings; entry 2 is a map, as YAML reads an unquoted line with ": " in it: quote the whole line'],
    ['job without a body', 'build:\n', 'jobs:build script is missing'],
    ['job is a list', 'build: [a]\n', 'jobs:build config must be a map'],
    ['unknown job key', 'build:\n  script: x\n  releases: { tag_name: v1 }\n', 'jobs:build config contains unknown keys: releases'],
    ['unknown artifacts key', 'b:\n  script: x\n  artifacts: { public: true }\n', 'jobs:b:artifacts config contains unknown keys: public'],
    ['unknown report', 'b:\n  script: x\n  artifacts: { reports: { junitt: r.xml } }\n', 'jobs:b:artifacts:reports config contains unknown keys: junitt'],
    ['bad artifacts:when', 'b:\n  script: x\n  artifacts: { when: sometimes }\n', 'jobs:b artifacts:when must be one of on_success, on_failure, always'],
    ['bad expire_in', 'b:\n  script: x\n  artifacts: { expire_in: soon }\n', "jobs:b artifacts:expire_in 'soon' is not a duration"],
    ['bad when', 'b:\n  script: x\n  when: later\n', 'jobs:b when must be one of on_success, on_failure, always, manual, delayed'],
    ['allow_failure not boolean', 'b:\n  script: x\n  allow_failure: "yes"\n', 'jobs:b allow_failure must be true or false'],
    ['tags not strings', 'b:\n  script: x\n  tags: [1, 2]\n', 'jobs:b tags must be a list of strings'],
    ['bad timeout', 'b:\n  script: x\n  timeout: forever\n', 'jobs:b timeout must be a number of seconds or a duration'],
    ['negative timeout', 'b:\n  script: x\n  timeout: -5\n', 'jobs:b timeout must be a positive whole number of seconds'],
    ['a cache that is not a map', 'b:\n  script: x\n  cache: [a]\n', 'jobs:b cache:0 must be a map'],
    ['five caches', 'b:\n  script: x\n  cache: [{}, {}, {}, {}, {}]\n', 'jobs:b cache lists 5 caches; at most 4 are allowed'],
    ['cache paths string', 'b:\n  script: x\n  cache: { paths: vendor }\n', 'jobs:b cache:paths must be a list of strings'],
    ['variable value a list', 'b:\n  script: x\n  variables: { A: [1] }\n', 'jobs:b variables:A must be a string, a number or a boolean'],
    ['variable bad name', 'b:\n  script: x\n  variables: { "A-B": x }\n', 'jobs:b variables:A-B is not a valid variable name'],
    ['image a number', 'b:\n  script: x\n  image: 5\n', 'jobs:b image must be an image name'],
    ['services a string', 'b:\n  script: x\n  services: postgres\n', 'jobs:b services must be a list of image names'],
    ['image entrypoint a string', 'b:\n  script: x\n  image: { name: a, entrypoint: /bin/sh }\n', 'jobs:b image:entrypoint must be a list of strings'],
    ['image pull_policy unknown', 'b:\n  script: x\n  image: { name: a, pull_policy: sometimes }\n', 'jobs:b image:pull_policy'],
    ['service command a string', 'b:\n  script: x\n  services: [{ name: a, command: run }]\n', 'jobs:b services:0:command must be a list of strings'],
    ['stage and type', 'b:\n  script: x\n  stage: test\n  type: test\n', 'jobs:b type cannot be used together with stage'],
    ['unknown stage', 'b:\n  script: x\n  stage: lint\n', "jobs:b stage 'lint' is not one of the pipeline's stages (build, test, deploy)"],
    ['dependency on a later stage', 'a:\n  stage: test\n  script: x\n  dependencies: [b]\nb:\n  stage: deploy\n  script: x\n', "jobs:a dependencies names 'b', which is in the later stage 'deploy'"],
    ['dependency on a missing job', 'a:\n  script: x\n  dependencies: [ghost]\n', "jobs:a dependencies names 'ghost', which is not a job"],
    ['dependency on a hidden job', '.h:\n  stage: build\n  script: x\na:\n  script: x\n  dependencies: [.h]\n', "jobs:a dependencies names '.h', which is not a job"],
    ['global before_script a map', 'before_script: { a: 1 }\nb:\n  script: x\n', 'before_script must be a string or a list of strings'],
    ['global variables a list', 'variables: [A]\nb:\n  script: x\n', 'variables must be a map'],
    ['global cache bad key', 'cache: { policy: sometimes }\nb:\n  script: x\n', 'cache:policy must be one of pull, push, pull-push'],
    ['stages not a list', 'stages: build\nb:\n  script: x\n', 'stages must be a non-empty list of stage names'],
    ['empty stages', 'stages: []\nb:\n  script: x\n', 'stages must be a non-empty list of stage names'],
    ['duplicate stage', 'stages: [a, a]\nb:\n  stage: a\n  script: x\n', "stages lists stage 'a' twice"],
    ['stages and types', 'stages: [a]\ntypes: [a]\nb:\n  stage: a\n  script: x\n', 'types cannot be used together with stages'],
    ['include without the project', 'include: other.yml\nb:\n  script: x\n', "include needs the project's files"],
  ])('%s', (_title, text, message) => {
    expect(refusal(text).message).toContain(message);
  });

  it('records the job and key on the error for callers that render it', () => {
    const error = refusal('test:unit:\n  script: x\n  artifacts:\n    paths: dist/\n');
    expect(error.job).toBe('test:unit');
    expect(error.key).toBe('artifacts:paths');
    expect(error.code).toBe('PIPELINE_INVALID');
  });

  it('refuses a pipeline with no jobs, counting hidden jobs as none', () => {
    expect(refusal('stages: [a]\n').message).toContain('the pipeline has no jobs');
    expect(refusal('.template:\n  script: x\n').message).toContain('the pipeline has no jobs');
    expect(refusal('').message).toContain('the pipeline is empty');
    expect(refusal('# only a comment\n').message).toContain('the pipeline is empty');
  });

  it('refuses a document that is not a map', () => {
    expect(refusal('- a\n- b\n').message).toContain('must be a YAML map');
    expect(refusal('just text').message).toContain('must be a YAML map');
  });

  it('says where a YAML syntax error is', () => {
    expect(refusal('a:\n  script: [x, y\nb: 3\n').message).toMatch(/^invalid YAML at line 3, column 1: /);
    expect(refusal('a: b: c\n').message).toMatch(/^invalid YAML at line 1, column 4: Nested mappings/);
  });

  it('keeps the last of a key written twice, as GitLab does, and warns about it', () => {
    const spec = parsePipeline('a:\n  script: x\na:\n  script: y\n');
    expect(spec.jobs.map((job) => job.commands)).toEqual([['y']]);
    expect(spec.warnings).toEqual(["the pipeline file: key 'a' is written twice in one map (line 3); the last one is used"]);
  });

  it('refuses unknown aliases and alias bombs instead of expanding them', () => {
    expect(refusal('a:\n  script: *nope\n').message).toContain('invalid YAML');
    const bomb = [
      'a: &a ["x","x","x","x","x","x","x","x","x"]',
      'b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]',
      'c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]',
      'd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]',
      'e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]',
      'job:\n  script: *e',
    ].join('\n');
    expect(refusal(bomb).message).toContain('invalid YAML');
  });
});

describe('parsePipeline on arbitrary input', () => {
  /** Either a spec or a PipelineConfigError: never a TypeError or another crash. */
  function parsesOrRefuses(text: string): void {
    try {
      parsePipeline(text);
    } catch (error) {
      if (!(error instanceof PipelineConfigError)) throw error;
    }
  }

  it('refuses random text only with PipelineConfigError', () => {
    fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 200 }), parsesOrRefuses), { numRuns: 300 });
  });

  it('refuses random documents shaped like pipelines only with PipelineConfigError', () => {
    const key = fc.constantFrom('script', 'stage', 'stages', 'artifacts', 'paths', 'cache', 'key', 'variables', 'when', 'dependencies',
      'timeout', 'tags', 'image', 'services', 'name', 'before_script', 'after_script', 'allow_failure', 'build', 'test', '.hidden');
    const scalar = fc.oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.boolean(), fc.constant(null));
    const value = fc.letrec((tie) => ({
      node: fc.oneof({ depthSize: 'small' }, scalar, fc.array(tie('node'), { maxLength: 3 }), fc.dictionary(key, tie('node'), { maxKeys: 3 })),
    })).node;
    fc.assert(
      fc.property(fc.dictionary(key, value, { maxKeys: 6 }), (doc) => parsesOrRefuses(stringify(doc))),
      { numRuns: 500 },
    );
  });
});

describe('parseDuration', () => {
  it.each([
    ['90', 90],
    ['45s', 45],
    ['10 minutes', 600],
    ['1h 30m', 5400],
    ['1h30m', 5400],
    ['1 hour and 30 minutes', 5400],
    ['2 Hours, 5 min', 7500],
    ['1 day', 86_400],
    ['2 weeks', 1_209_600],
    ['1 month', 2_592_000],
    ['1.5h', 5400],
  ])('%s is %i seconds', (text, seconds) => {
    expect(parseDuration(text)).toBe(seconds);
  });

  it.each(['', 'never', 'soon', '10 lightyears', '0', '1h x', '-5m'])('refuses %j', (text) => {
    expect(parseDuration(text)).toBeUndefined();
  });
});
