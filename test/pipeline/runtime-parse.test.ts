/** The runtime job keys (needs, when/start_in, retry, interruptible, coverage, cache/artifacts extras) as parsed. */
import { describe, expect, it } from 'vitest';
import { hasCode } from '../../src/util/errors.js';
import { parsePipeline, PipelineConfigError } from '../../src/pipeline/parse.js';

function refusal(text: string): PipelineConfigError {
  try {
    parsePipeline(text);
  } catch (error) {
    expect(hasCode(error, 'PIPELINE_INVALID')).toBe(true);
    return error as PipelineConfigError;
  }
  throw new Error(`expected the pipeline to be refused:\n${text}`);
}

const jobOf = (text: string, name: string) => parsePipeline(text).jobs.find((job) => job.name === name)!;

describe('needs', () => {
  it('reads names, maps with artifacts and optional, and an empty list', () => {
    const text = `
stages: [build, test]
a: { stage: build, script: x }
b: { stage: build, script: x }
c: { stage: test, script: x, needs: [a, { job: b, artifacts: false }, { job: gone, optional: true }] }
d: { stage: test, script: x, needs: [] }
e: { stage: test, script: x }
`;
    expect(jobOf(text, 'c').needs).toEqual([
      { job: 'a', artifacts: true, optional: false },
      { job: 'b', artifacts: false, optional: false },
    ]);
    expect(jobOf(text, 'd').needs).toEqual([]);
    expect(jobOf(text, 'e').needs).toBeUndefined();
  });

  it('expands a need on a parallel job to all its instances', () => {
    const text = `
"unit 1/2": { stage: build, script: x }
"unit 2/2": { stage: build, script: x }
report: { stage: test, script: x, needs: [unit] }
`;
    expect(jobOf(text, 'report').needs?.map((need) => need.job)).toEqual(['unit 1/2', 'unit 2/2']);
    const matrix = '"build: [arm]": { stage: build, script: x }\n"build: [x86]": { stage: build, script: x }\n"build-docs": { stage: build, script: x }\npack: { stage: test, script: x, needs: [build] }\n';
    expect(jobOf(matrix, 'pack').needs?.map((need) => need.job)).toEqual(['build: [arm]', 'build: [x86]']);
  });

  it.each([
    ['an unknown job', 'a: { script: x, needs: [nope] }\n', "jobs:a needs names 'nope', which is not a job of this pipeline"],
    ['itself', 'a: { script: x, needs: [a] }\n', "jobs:a needs names the job itself ('a')"],
    ['a later stage', 'a: { stage: build, script: x, needs: [b] }\nb: { stage: test, script: x }\n', "names 'b', which is in the later stage 'test'"],
    ['a cycle', 'a: { script: x, needs: [c] }\nb: { script: x, needs: [a] }\nc: { script: x, needs: [b] }\n', 'forms a cycle: a → c → b → a'],
    ['a job twice', 'a: { script: x }\nb: { script: x, needs: [a, a] }\n', "jobs:b needs names 'a' twice"],
    ['another project', 'b: { script: x, needs: [{ project: g/p, job: a, ref: main }] }\n', 'needs: project is a cross-project need (GitLab Premium)'],
    ['a dependency outside needs', 'a: { stage: build, script: x }\nz: { stage: build, script: x }\nb: { stage: test, script: x, needs: [a], dependencies: [z] }\n', "dependencies names 'z', which is not in needs"],
  ])('refuses a need on %s', (_what, text, message) => {
    expect(refusal(text).message).toContain(message);
  });

  it('lists every needs problem of the file with the jobs\' other problems, once per job written', () => {
    const text = 'a: { script: x, needs: [nope], tags: oops }\nshard: { script: x, parallel: 2, needs: [gone] }\nb: { script: x, needs: [a], dependencies: [shard] }\n';
    expect(refusal(text).problems.map((problem) => problem.message)).toEqual([
      'jobs:a tags must be a list of strings',
      "jobs:shard needs names 'gone', which is not a job of this pipeline",
      "jobs:b dependencies names 'shard 1/2', which is not in needs; with needs, a job can only use artifacts of jobs it needs",
      "jobs:b dependencies names 'shard 2/2', which is not in needs; with needs, a job can only use artifacts of jobs it needs",
    ]);
  });

  it('resolves needs: parallel: matrix: to the copies it selects, $[[ matrix.X ]] taking the needing copy\'s value', () => {
    const text = `
build: { stage: build, script: x, parallel: { matrix: [{ P: [aws, gcp], S: [a, b] }] } }
one: { script: x, needs: [{ job: build, parallel: { matrix: [{ P: aws, S: a }] } }] }
some: { script: x, needs: [{ job: build, parallel: { matrix: [{ P: [gcp] }] } }] }
test: { script: x, parallel: { matrix: [{ P: [aws, gcp] }] }, needs: [{ job: build, parallel: { matrix: [{ P: '$[[ matrix.P ]]', S: b }] } }] }
`;
    const spec = parsePipeline(text);
    const needsOf = (name: string) => spec.jobs.find((job) => job.name === name)?.needs?.map((need) => need.job);
    expect(needsOf('one')).toEqual(['build: [aws, a]']);
    expect(needsOf('some')).toEqual(['build: [gcp, a]', 'build: [gcp, b]']);
    expect(needsOf('test: [aws]')).toEqual(['build: [aws, b]']);
    expect(needsOf('test: [gcp]')).toEqual(['build: [gcp, b]']);
  });

  it.each([
    ['a job that is not a matrix job', 'b: { stage: build, script: x, parallel: 2 }\nc: { script: x, needs: [{ job: b, parallel: { matrix: [{ X: y }] } }] }\n', "jobs:c needs names 'b' with parallel: matrix:, but 'b' is not a parallel: matrix: job"],
    ['no copy', 'b: { stage: build, script: x, parallel: { matrix: [{ X: [y] }] } }\nc: { script: x, needs: [{ job: b, parallel: { matrix: [{ X: z }] } }] }\n', "jobs:c needs names 'b' with parallel: matrix: X: z, which matches none of its copies"],
    ['an unknown matrix variable', 'b: { stage: build, script: x, parallel: { matrix: [{ X: [y] }] } }\nc: { script: x, parallel: { matrix: [{ X: [y] }] }, needs: [{ job: b, parallel: { matrix: [{ X: "$[[ matrix.Q ]]" }] } }] }\n', "jobs:c needs uses $[[ matrix.Q ]], but 'Q' is not a variable of its own parallel: matrix: (X)"],
  ])('refuses needs: parallel: matrix: on %s', (_what, text, message) => {
    expect(refusal(text).message).toContain(message);
  });

  it('flattens a list that !reference nests into needs', () => {
    const text = 'a: { script: x }\nb: { script: x }\n.base: { needs: [a] }\nc: { script: x, needs: [b, !reference [.base, needs]] }\n';
    expect(jobOf(text, 'c').needs?.map((need) => need.job)).toEqual(['b', 'a']);
  });

  it('lets a job with needs: [] name dependencies, as GitLab does (it downloads nothing then)', () => {
    expect(jobOf('a: { script: x }\nb: { stage: deploy, script: x, needs: [], dependencies: [a] }\n', 'b').needs).toEqual([]);
  });

  it('lets a job take artifacts from a job of its own stage that it needs', () => {
    expect(jobOf('a: { script: x }\nb: { script: x, needs: [a], dependencies: [a] }\n', 'b').dependencies).toEqual(['a']);
  });
});

describe('when, start_in, retry, interruptible, coverage', () => {
  it('makes a manual job allowed to fail unless it says otherwise', () => {
    const text = 'a: { script: x, when: manual }\nb: { script: x, when: manual, allow_failure: false }\nc: { script: x }\n';
    expect([jobOf(text, 'a').allowFailure, jobOf(text, 'b').allowFailure, jobOf(text, 'c').allowFailure]).toEqual([true, false, false]);
  });

  it('reads a delayed job with its start_in in seconds', () => {
    const job = jobOf('a: { script: x, when: delayed, start_in: 2 minutes }\n', 'a');
    expect([job.when, job.startIn]).toEqual(['delayed', 120]);
  });

  it('reads retry as a number or a map, when defaulting to always', () => {
    const text = 'a: { script: x, retry: 2 }\nb: { script: x, retry: { max: 1, when: [script_failure, runner_system_failure] } }\nc: { script: x, retry: { max: 1, when: stuck_or_timeout_failure } }\n';
    expect(jobOf(text, 'a').retry).toEqual({ max: 2, when: ['always'] });
    expect(jobOf(text, 'b').retry).toEqual({ max: 1, when: ['script_failure', 'runner_system_failure'] });
    expect(jobOf(text, 'c').retry).toEqual({ max: 1, when: ['stuck_or_timeout_failure'] });
  });

  it('reads interruptible, coverage, cache policy and key files, artifacts exclude and dotenv reports', () => {
    const job = jobOf(`
a:
  script: x
  interruptible: true
  coverage: '/Total: (\\d+)%/i'
  cache: { key: { files: [package-lock.json], prefix: npm }, paths: [node_modules/], policy: pull }
  artifacts: { paths: [out/], exclude: [out/**/*.tmp], reports: { dotenv: build.env } }
`, 'a');
    expect(job.interruptible).toBe(true);
    expect(job.coverage).toEqual({ source: 'Total: (\\d+)%', flags: 'i' });
    // RE2 (GitLab's engine) writes flags inside the pattern.
    expect(jobOf("a: { script: x, coverage: '/(?i)total: (\\d+)%/' }\n", 'a').coverage).toEqual({ source: 'total: (\\d+)%', flags: 'i' });
    expect(job.cache).toEqual([{ keyFiles: { files: ['package-lock.json'], prefix: 'npm' }, paths: ['node_modules/'], policy: 'pull' }]);
    expect(job.artifacts).toEqual({ paths: ['out/'], exclude: ['out/**/*.tmp'], reports: { dotenv: ['build.env'] } });
  });

  it('reads several caches with when, fallback_keys and a policy from a variable', () => {
    const job = jobOf(`
a:
  script: x
  cache:
    - { key: deps, paths: [vendor/], when: always, fallback_keys: [deps-main] }
    - { key: build, paths: [out/], policy: $POLICY, unprotect: true }
`, 'a');
    expect(job.cache).toEqual([
      { key: 'deps', paths: ['vendor/'], when: 'always', fallbackKeys: ['deps-main'] },
      { key: 'build', paths: ['out/'], policy: '$POLICY' },
    ]);
    expect(refusal('a: { script: x, cache: { policy: sometimes } }\n').message).toContain('jobs:a cache:policy must be one of pull, push, pull-push');
  });

  it('reads allow_failure: exit_codes as one status or a list, and refuses anything else', () => {
    expect(jobOf('a: { script: x, allow_failure: { exit_codes: 137 } }\n', 'a')).toMatchObject({ allowFailure: false, allowFailureExitCodes: [137] });
    expect(jobOf('a: { script: x, allow_failure: { exit_codes: [1, 3] } }\n', 'a').allowFailureExitCodes).toEqual([1, 3]);
    expect(refusal('a: { script: x, allow_failure: { exit_codes: [] } }\n').message).toContain('jobs:a allow_failure:exit_codes must be an exit status');
  });

  it.each([
    ['delayed without start_in', 'a: { script: x, when: delayed }\n', 'jobs:a start_in is missing'],
    ['start_in without delayed', 'a: { script: x, start_in: 1 minute }\n', 'jobs:a start_in can only be used with when: delayed'],
    ['start_in over a week', 'a: { script: x, when: delayed, start_in: 8 days }\n', 'jobs:a start_in must be a duration between 1 second and 1 week'],
    ['retry 3', 'a: { script: x, retry: 3 }\n', 'jobs:a retry must be 0, 1 or 2'],
    ['an unknown retry reason', 'a: { script: x, retry: { max: 1, when: [flaky] } }\n', 'jobs:a retry:when:0 must be one of always'],
    ['retry exit_codes out of range', 'a: { script: x, retry: { max: 1, exit_codes: [300] } }\n', 'jobs:a retry:exit_codes must be an exit status'],
    ['coverage without slashes', "a: { script: x, coverage: 'Total: (\\d+)%' }\n", 'jobs:a coverage must be a regular expression between slashes'],
    ['coverage that does not compile', "a: { script: x, coverage: '/(unclosed/' }\n", 'jobs:a coverage is not a valid regular expression'],
    ['interruptible not boolean', 'a: { script: x, interruptible: maybe }\n', 'jobs:a interruptible must be true or false'],
    ['three key files', 'a: { script: x, cache: { key: { files: [a, b, c] }, paths: [x] } }\n', 'jobs:a cache:key:files must list one or two files'],
    ['a key file outside', 'a: { script: x, cache: { key: { files: [../x] }, paths: [x] } }\n', "jobs:a cache:key:files names '../x', which is not a path inside the project"],
  ])('refuses %s', (_what, text, message) => {
    expect(refusal(text).message).toContain(message);
  });
});
