import { describe, expect, it } from 'vitest';
import { parseJobPayload } from '../../src/protocol/v4/payload.js';

/** A v4 job as GitLab sends it (docs/protocol-v4.md §6), with what a test changes. */
function job(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: 42,
    token: 'jobtok-42',
    allow_git_fetch: true,
    job_info: { id: 42, name: 'test', stage: 'test', project_id: 7, project_name: 'project' },
    git_info: {
      repo_url: 'http://gitlab-ci-token:jobtok-42@gitlab.test/group/project.git',
      ref: 'main',
      sha: '0123456789abcdef0123456789abcdef01234567',
      before_sha: '0000000000000000000000000000000000000000',
      ref_type: 'branch',
      refspecs: ['+refs/pipelines/9:refs/pipelines/9', '+refs/heads/main:refs/remotes/origin/main'],
      depth: 20,
    },
    runner_info: { timeout: 3600, runner_session_url: null },
    variables: [
      { key: 'CI_JOB_TOKEN', value: 'jobtok-42', public: false, masked: true },
      { key: 'PLAIN', value: 'x', public: true, masked: false },
      { key: 'CONF', value: 'a=b\n', public: false, masked: false, file: true },
      { key: 'RAW', value: '$HOME', public: true, masked: false, raw: true },
    ],
    steps: [
      { name: 'script', script: ['echo before', 'echo script'], timeout: 3600, when: 'on_success', allow_failure: false },
      { name: 'after_script', script: ['echo after'], timeout: 3600, when: 'always', allow_failure: true },
    ],
    image: { name: 'alpine:3.20', entrypoint: [''], ports: [], pull_policy: ['if-not-present'] },
    services: [{ name: 'postgres:16', alias: 'db', command: ['postgres', '-c', 'fsync=off'], entrypoint: null }, 'not an object'],
    artifacts: [
      { name: 'out', untracked: false, paths: ['out/'], exclude: ['out/*.tmp'], when: 'on_success', expire_in: '1 day', artifact_type: 'archive', artifact_format: 'zip' },
      { name: 'dotenv', untracked: false, paths: ['build.env'], when: 'always', expire_in: null, artifact_type: 'dotenv', artifact_format: 'gzip' },
    ],
    cache: [{ key: 'deps', untracked: false, paths: ['node_modules/'], policy: 'pull-push', when: 'on_success', fallback_keys: ['main'] }],
    credentials: [{ type: 'registry', url: 'registry.test', username: 'gitlab-ci-token', password: 'jobtok-42' }],
    dependencies: [{ id: 41, name: 'build', token: 'jobtok-42', artifacts_file: { filename: 'artifacts.zip', size: 1234 } }, { id: 40, name: 'lint', token: 'jobtok-42' }],
    features: { trace_sections: true, failure_reasons: ['script_failure', 'unknown_failure'] },
    ...overrides,
  };
}

describe('parseJobPayload', () => {
  it('maps a v4 job onto the job model', () => {
    const result = parseJobPayload(job());
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    const build = result.build;
    expect(build).toMatchObject({
      id: 42, token: 'jobtok-42', name: 'test', stage: 'test', project_id: 7, ref: 'main', tag: false,
      sha: '0123456789abcdef0123456789abcdef01234567', allow_git_fetch: true, timeout: 3600,
      commands: 'echo before\necho script', refspecs: ['+refs/pipelines/9:refs/pipelines/9', '+refs/heads/main:refs/remotes/origin/main'], git_depth: 20,
      failure_reasons: ['script_failure', 'unknown_failure'],
    });
    expect(build.options).toMatchObject({
      script: ['echo before', 'echo script'], after_script: ['echo after'], image: 'alpine:3.20', imageEntrypoint: [''], imagePullPolicy: ['if-not-present'],
      services: ['postgres:16'], serviceSpecs: [{ name: 'postgres:16', alias: 'db', command: ['postgres', '-c', 'fsync=off'] }],
      cache: [{ key: 'deps', policy: 'pull-push', fallback_keys: ['main'] }],
    });
    expect(build.options.artifacts).toEqual([
      { name: 'out', paths: ['out/'], untracked: false, when: 'on_success', expire_in: '1 day', exclude: ['out/*.tmp'], artifact_type: 'archive', artifact_format: 'zip' },
      { name: 'dotenv', paths: ['build.env'], untracked: false, when: 'always', artifact_type: 'dotenv', artifact_format: 'gzip' },
    ]);
    expect(build.variables).toEqual([
      { key: 'CI_JOB_TOKEN', value: 'jobtok-42', public: false, masked: true },
      { key: 'PLAIN', value: 'x', public: true, masked: false },
      { key: 'CONF', value: 'a=b\n', public: false, masked: false, file: true },
      { key: 'RAW', value: '$HOME', public: true, masked: false, raw: true },
    ]);
    expect(build.depends_on_builds.map((dep) => ({ id: dep.id, token: dep.token, file: dep.artifacts_file }))).toEqual([
      { id: 41, token: 'jobtok-42', file: { filename: 'artifacts.zip', size: 1234 } },
      { id: 40, token: 'jobtok-42', file: undefined },
    ]);
    expect(build.options.dependencies).toBeUndefined();
    expect(build.credentials).toHaveLength(1);
  });

  it('reads the minimal body of a shell job, nulls as absent', () => {
    const result = parseJobPayload(job({ image: null, services: null, artifacts: null, cache: null, credentials: null, dependencies: null, steps: [{ name: 'script', script: ['true'], when: 'on_success' }] }));
    expect(result.ok && result.build.options).toEqual({ script: ['true'] });
  });

  it('refuses a job with a step it does not run, keeping id and token to report it', () => {
    const steps = [{ name: 'release', script: ['release-cli create'], when: 'on_success' }];
    expect(parseJobPayload(job({ steps }))).toEqual({ ok: false, message: expect.stringMatching(/^steps\.0\.name: step "release" is not supported/), id: 42, token: 'jobtok-42' });
  });

  it('refuses a job without what it cannot guess, and artifacts it cannot read, naming the key but never the value', () => {
    const noSha = parseJobPayload(job({ git_info: { repo_url: 'http://h/p.git', ref: 'main' } }));
    expect(noSha.ok === false && noSha.message).toMatch(/git_info\.sha: missing or null/);
    const bad = parseJobPayload(job({ artifacts: [{ paths: 'out/', artifact_format: 'zip' }] }));
    expect(bad.ok === false && bad.message).toMatch(/^artifacts\.0\.paths: /);
    expect(bad.ok === false && bad.message).not.toContain('out/');
  });

  it('needs id and token of a dependency only when its artifacts are downloaded', () => {
    const result = parseJobPayload(job({ dependencies: [{ name: 'build', artifacts_file: { filename: 'a.zip', size: 1 } }] }));
    expect(result.ok === false && result.message).toMatch(/dependencies\.0\.id: missing \(needed to download the artifacts of "build"\)/);
  });

  it('reads hooks, image and service executor_opts and a service\'s own variables', () => {
    const result = parseJobPayload(job({
      hooks: [{ name: 'pre_get_sources_script', script: ['echo pre'] }, { name: null, script: ['x'] }],
      image: { name: 'alpine', executor_opts: { docker: { user: 1000, platform: 'linux/arm64' }, kubernetes: { user: '1000:1000' } } },
      services: [{ name: 'postgres:16', alias: 'db,pg', variables: [{ key: 'POSTGRES_PASSWORD', value: 'pw' }, { value: 'no key' }], executor_opts: { docker: { user: 'postgres' } } }],
    }));
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.build.hooks).toEqual([{ name: 'pre_get_sources_script', script: ['echo pre'] }]);
    expect(result.build.options.imageExecutorOpts).toEqual({ docker: { user: '1000', platform: 'linux/arm64' }, kubernetes: { user: '1000:1000' } });
    expect(result.build.options.serviceSpecs).toEqual([{ name: 'postgres:16', alias: 'db,pg', variables: [{ key: 'POSTGRES_PASSWORD', value: 'pw' }], executor_opts: { docker: { user: 'postgres' } } }]);
  });

  it('refuses executor_opts GitLab Runner 19 does not know, as it does', () => {
    const result = parseJobPayload(job({ image: { name: 'alpine', executor_opts: { docker: { shm_size: '1g' }, podman: {} } } }));
    expect(result.ok === false && result.message).toMatch(/^image\.executor_opts: unsupported options (podman, docker\.shm_size|docker\.shm_size, podman) \(supported: /);
  });
});
