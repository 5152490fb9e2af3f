/** Stages, sections, stamps, steps, script timeouts and pull failures on the kubernetes executor. */
import { describe, expect, it } from 'vitest';
import { sectionNames, sectionsOpenAt } from '../../helpers/log-text.js';
import type { TestServer } from '../../helpers/server.js';
import { skipKubernetes } from './cluster.js';
import { runKubernetesJob, useKubernetesTestServer, useNamespace } from './jobs.js';

let t: TestServer;
let token: string;
useKubernetesTestServer((server, runnerToken) => {
  t = server;
  token = runnerToken;
});

const namespace = await useNamespace('ci-runner-test-stages');

describe.skipIf(skipKubernetes)('the kubernetes executor\'s stages', () => {
  it('runs the stages in their sections and a release step after the script, the release\'s variables expanded', async () => {
    const yaml =
      'r:\n  variables:\n    PATH: "$CI_PROJECT_DIR/bin:/usr/local/bin:/usr/bin:/bin"\n  script:\n' +
      "    - mkdir -p bin && echo 'echo release-cli-args \"$@\"' > bin/release-cli && chmod +x bin/release-cli\n" +
      '  after_script: [echo after]\n  release:\n    tag_name: v1\n    description: notes for $CI_JOB_NAME\n';
    const { status, trace } = await runKubernetesJob(t, token, yaml, { namespace });
    expect(status, trace).toBe('success');
    expect(sectionNames(trace)).toEqual(['prepare_executor', 'prepare_script', 'get_sources', 'step_script', 'step_release', 'after_script', 'cleanup_file_variables']);
    expect(trace).toContain('Preparing the "kubernetes" executor');
    expect(sectionsOpenAt(trace, 'release-cli-args create --description notes for r --tag-name v1\n')?.map((s) => s.name)).toEqual(['step-release']);
  });

  it('stops the steps at RUNNER_SCRIPT_TIMEOUT and still runs after_script', async () => {
    const { status, id, trace } = await runKubernetesJob(t, token, 'j:\n  variables:\n    RUNNER_SCRIPT_TIMEOUT: 3s\n    GIT_STRATEGY: none\n  script: [sleep 60]\n  after_script: [echo "after=$CI_JOB_STATUS"]\n', { namespace });
    expect(status).toBe('failed');
    expect(t.server.getJob(id)?.failure_reason).toBe('job_execution_timeout');
    expect(trace).toContain('after=timedout');
    expect(trace).toContain('ERROR: Job failed: script timeout: context deadline exceeded');
  });

  it('fails a job whose image is behind a registry out of reach as an external dependency failure', async () => {
    const { status, id, trace } = await runKubernetesJob(t, token, 'j:\n  image: 127.0.0.1:1/ci-runner-test/absent:1\n  variables:\n    GIT_STRATEGY: none\n  script: [echo never]\n', { namespace, kubernetes: { pull_policy: 'always' } });
    expect(status).toBe('failed');
    expect(t.server.getJob(id)?.failure_reason, trace).toBe('runner_external_dependency_failure');
  });

  it('gets the sources again after a failed fetch, up to GET_SOURCES_ATTEMPTS', async () => {
    t.server.faults.add({ endpoint: 'git', action: 'error', status: 500, count: 1 });
    const { status, trace } = await runKubernetesJob(t, token, 'j:\n  variables:\n    GET_SOURCES_ATTEMPTS: "2"\n  script: [cat README.md]\n', { namespace });
    expect(status, trace).toBe('success');
    expect(trace).toContain('Getting sources failed (attempt 1 of 2); retrying...');
    expect(trace).toContain('# p');
  });
});
