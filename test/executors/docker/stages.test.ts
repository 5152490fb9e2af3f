/** Stages, sections, stamps, steps and script timeouts on the docker executor, as on the others. */
import { describe, expect, it } from 'vitest';
import { sectionNames, sectionsOpenAt } from '../../helpers/log-text.js';
import type { TestServer } from '../../helpers/server.js';
import { execa } from 'execa';
import { logText } from '../../helpers/log-text.js';
import { waitUntil } from '../../cli/helpers.js';
import { IMAGES, skipDocker } from './engine.js';
import { runDockerJob, startDockerJob, useDockerTestServer } from './jobs.js';

let t: TestServer;
let token: string;
useDockerTestServer((server, runnerToken) => {
  t = server;
  token = runnerToken;
});

describe.skipIf(skipDocker)('the docker executor\'s stages', () => {
  it('runs the stages in their sections, lines stamped, and a release step after the script', async () => {
    const yaml =
      'r:\n  variables:\n    PATH: "$CI_PROJECT_DIR/bin:/usr/local/bin:/usr/bin:/bin"\n    GIT_STRATEGY: none\n  script:\n' +
      "    - mkdir -p bin && echo 'echo release-cli-args \"$@\"' > bin/release-cli && chmod +x bin/release-cli\n" +
      '  after_script: [echo after]\n  release:\n    tag_name: v1\n    description: notes for $CI_JOB_NAME\n';
    const { status, trace } = await runDockerJob(t, token, yaml);
    expect(status, trace).toBe('success');
    expect(sectionNames(trace)).toEqual(['prepare_executor', 'prepare_script', 'get_sources', 'step_script', 'step_release', 'after_script', 'cleanup_file_variables']);
    expect(trace).toContain('Preparing the "docker" executor');
    expect(trace).toContain('release-cli-args create --description notes for r --tag-name v1\n');
    expect(sectionsOpenAt(trace, 'release-cli-args create')?.map((s) => s.name)).toEqual(['step-release']);
  });

  it('stops the steps at RUNNER_SCRIPT_TIMEOUT and still runs after_script', async () => {
    const { status, id, trace } = await runDockerJob(t, token, 'j:\n  variables:\n    RUNNER_SCRIPT_TIMEOUT: 3s\n    GIT_STRATEGY: none\n  script: [sleep 60]\n  after_script: [echo "after=$CI_JOB_STATUS"]\n');
    expect(status).toBe('failed');
    expect(t.server.getJob(id)?.failure_reason).toBe('job_execution_timeout');
    expect(trace).toContain('after=timedout');
    expect(trace).toContain('ERROR: Job failed: script timeout: context deadline exceeded');
  });

  it('fails a job whose image is behind a registry out of reach as an external dependency failure', async () => {
    const { status, id, trace } = await runDockerJob(t, token, `j:\n  image: 127.0.0.1:1/ci-runner-test/absent:1\n  variables:\n    GIT_STRATEGY: none\n  script: [echo never]\n`, { docker: { pull_policy: 'always', image: IMAGES.sh } });
    expect(status).toBe('failed');
    expect(t.server.getJob(id)?.failure_reason, trace).toBe('runner_external_dependency_failure');
  });

  it('runs a step again in a new container when its container was removed under it, up to EXECUTOR_JOB_SECTION_ATTEMPTS', async () => {
    const yaml = 'j:\n  variables:\n    EXECUTOR_JOB_SECTION_ATTEMPTS: "2"\n    GIT_STRATEGY: none\n  script:\n    - if [ ! -e tried ]; then touch tried; echo first-attempt; sleep 60; fi\n    - echo second-attempt\n';
    const job = await startDockerJob(t, token, yaml);
    await waitUntil(async () => logText(await t.server.getTrace(job.id)).includes('\nfirst-attempt'), 60_000, 'the first attempt to start');
    const names = (await execa('docker', ['ps', '--format', '{{.Names}}'])).stdout.split('\n');
    const name = names.find((n) => n.startsWith(`ci-runner-${job.id}-`) && n.endsWith('-step-script'));
    expect(name, names.join(' ')).toBeDefined();
    await execa('docker', ['rm', '--force', name!]);
    const { status, trace } = await job.done;
    expect(status, trace).toBe('success');
    expect(trace).toContain(`ERROR: Container "${name}" not found or removed. Will retry...`);
    expect(trace).toContain('Retrying step_script');
    expect(trace).toContain('\nsecond-attempt');
  });

  it('gets the sources again after a failed fetch, up to GET_SOURCES_ATTEMPTS', async () => {
    t.server.faults.add({ endpoint: 'git', action: 'error', status: 500, count: 1 });
    const { status, trace } = await runDockerJob(t, token, 'j:\n  variables:\n    GET_SOURCES_ATTEMPTS: "2"\n  script: [cat README.md]\n');
    expect(status, trace).toBe('success');
    expect(trace).toContain('Getting sources failed (attempt 1 of 2); retrying...');
  });
});
