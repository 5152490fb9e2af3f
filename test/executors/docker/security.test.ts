/**
 * The runner's limits on what a job may ask of the docker executor, as GitLab Runner 19 enforces them,
 * with its messages: allowed_images, allowed_services, allowed_pull_policies, allowed_users,
 * allowed_privileged_images, services_privileged, allowed_privileged_services, services_limit.
 */
import { describe, expect, it } from 'vitest';
import type { TestServer } from '../../helpers/server.js';
import { IMAGES, skipDocker } from './engine.js';
import { runDockerJob, useDockerTestServer } from './jobs.js';

let t: TestServer;
let token: string;
useDockerTestServer((server, runnerToken) => {
  t = server;
  token = runnerToken;
});

/**
 * Whether a job's trace shows a privileged container: every capability in its CapEff line, or, on an
 * engine that cannot start privileged containers (a docker engine itself in a container), the error
 * that starting one gives. Either way the flag reached the engine.
 */
const privileged = (trace: string): boolean => /CapEff:\s+0*1?f{9,}/.test(trace) || /unable to apply caps/.test(trace);

describe.skipIf(skipDocker)('docker security knobs', () => {
  it('refuses an image outside allowed_images with GitLab Runner\'s lines, and allows the runner\'s own default image', async () => {
    const refused = await runDockerJob(t, token, `j:\n  image: ${IMAGES.bash}\n  script:\n    - echo never\n`, { docker: { allowed_images: ['ci-runner-test/user:*'] } });
    expect(refused.status).toBe('failed');
    expect(refused.trace).toContain(`ERROR: The "${IMAGES.bash}" image is not present on list of allowed images:`);
    expect(refused.trace).toContain('\n- ci-runner-test/user:*\n');
    expect(refused.trace).toContain("Please check runner's allowed_images configuration: https://docs.gitlab.com/runner/configuration/advanced-configuration/");
    expect(refused.trace).toContain('ERROR: Job failed: disallowed image');
    expect(refused.trace).not.toContain('$ echo never');
    // The job names no image: the runner's default (IMAGES.sh), not on the list, is its own choice.
    const own = await runDockerJob(t, token, 'j:\n  script:\n    - echo default image ran\n', { docker: { allowed_images: ['ci-runner-test/user:*'] } });
    expect(own.status, own.trace).toBe('success');
    expect(own.trace).toContain('default image ran');
  }, 90_000);

  it('refuses a job\'s service outside allowed_services, but not one the runner itself configures', async () => {
    const refused = await runDockerJob(t, token, `j:\n  services:\n    - ${IMAGES.httpd}\n  script:\n    - echo never\n`, { docker: { allowed_services: ['ci-runner-test/nolisten:*'] } });
    expect(refused.status).toBe('failed');
    expect(refused.trace).toContain(`ERROR: The "${IMAGES.httpd}" image is not present on list of allowed services:`);
    expect(refused.trace).toContain('\n- ci-runner-test/nolisten:*\n');
    const own = await runDockerJob(t, token, 'j:\n  script:\n    - wget -q -O - http://ci-runner-test__httpd/\n', { docker: { allowed_services: ['ci-runner-test/nolisten:*'], services: [IMAGES.httpd] } });
    expect(own.status, own.trace).toBe('success');
    expect(own.trace).toContain('hello from the service');
  }, 90_000);

  it('refuses a pull policy outside allowed_pull_policies, naming where it came from, and says which policy it uses', async () => {
    const job = await runDockerJob(t, token, `j:\n  image:\n    name: ${IMAGES.sh}\n    pull_policy: always\n  script:\n    - echo never\n`, { docker: { allowed_pull_policies: ['if-not-present'] } });
    expect(job.status).toBe('failed');
    expect(job.trace).toContain(`ERROR: Job failed: invalid pull policy for image "${IMAGES.sh}": pull_policy ([always]) defined in GitLab pipeline config is not one of the allowed_pull_policies ([if-not-present])`);
    const runner = await runDockerJob(t, token, 'j:\n  script:\n    - echo never\n', { docker: { pull_policy: 'always', allowed_pull_policies: ['never'] } });
    expect(runner.trace).toContain('pull_policy ([always]) defined in Runner config is not one of the allowed_pull_policies ([never])');
    const ok = await runDockerJob(t, token, `j:\n  image:\n    name: ${IMAGES.sh}\n    pull_policy: [always, if-not-present]\n  script:\n    - echo ran\n`, { docker: { allowed_pull_policies: ['if-not-present'] } });
    expect(ok.status, ok.trace).toBe('success');
    expect(ok.trace).toContain(`Using effective pull policy of [if-not-present] for container ${IMAGES.sh}`);
  }, 90_000);

  it('refuses a user outside allowed_users with GitLab Runner\'s message', async () => {
    const job = await runDockerJob(t, token, 'j:\n  script:\n    - echo never\n', { docker: { user: '1000', allowed_users: ['2000', 'builder'] } });
    expect(job.status).toBe('failed');
    expect(job.trace).toContain('ERROR: Job failed: user "1000" is not an allowed user: [2000 builder]');
    const ok = await runDockerJob(t, token, 'j:\n  script:\n    - id -u\n', { docker: { user: '1000', allowed_users: ['1000'] } });
    expect(ok.status, ok.trace).toBe('success');
    // The job's own `image: docker: user` is checked the same way.
    const asked = await runDockerJob(t, token, `j:\n  image:\n    name: ${IMAGES.sh}\n    docker:\n      user: "0"\n  script:\n    - echo never\n`, { docker: { allowed_users: ['1000'] } });
    expect(asked.status).toBe('failed');
    expect(asked.trace).toContain('ERROR: Job failed: user "0" is not an allowed user: [1000]');
  }, 90_000);

  it('runs privileged only the images allowed_privileged_images lists', async () => {
    const docker = { privileged: true, allowed_privileged_images: [IMAGES.sh] };
    const allowed = await runDockerJob(t, token, `j:\n  image: ${IMAGES.sh}\n  script:\n    - grep CapEff /proc/self/status\n`, { docker });
    expect(privileged(allowed.trace), allowed.trace).toBe(true);
    const other = await runDockerJob(t, token, `j:\n  image: ${IMAGES.bash}\n  script:\n    - grep CapEff /proc/self/status\n`, { docker });
    expect(other.status, other.trace).toBe('success');
    expect(other.trace).toMatch(/CapEff:/);
    expect(privileged(other.trace)).toBe(false);
  }, 90_000);

  it('gives services privilege as services_privileged and allowed_privileged_services say', async () => {
    // The service prints its capabilities and never listens: the wait's warning shows its log.
    const service = (name: string) => `  services:\n    - name: ${IMAGES.nolisten}\n      alias: ${name}\n      command: ["sh", "-c", "grep CapEff /proc/self/status; exec sleep 600"]\n`;
    const run = (docker: Record<string, unknown>) => runDockerJob(t, token, `j:\n${service('svc')}  script:\n    - echo ok\n`, { docker: { wait_for_services_timeout: 1, ...docker } });
    const cases: Array<[Record<string, unknown>, boolean]> = [
      [{ privileged: true, allowed_privileged_images: ['nothing/*'] }, true],
      [{ privileged: true, services_privileged: false }, false],
      [{ privileged: false, services_privileged: true }, true],
      [{ services_privileged: true, allowed_privileged_services: ['ci-runner-test/httpd:*'] }, false],
    ];
    for (const [docker, expected] of cases) {
      // The service's part of the trace: the build, privileged or not, comes after the wait.
      const service = (await run(docker)).trace.split('Waited for services')[0] ?? '';
      expect(privileged(service), `${JSON.stringify(docker)}\n${service}`).toBe(expected);
      if (!expected) expect(service).toMatch(/CapEff:/);
    }
  }, 180_000);

  it('refuses more services than services_limit with GitLab Runner\'s message', async () => {
    const job = await runDockerJob(t, token, `j:\n  services:\n    - ${IMAGES.httpd}\n  script:\n    - echo never\n`, { docker: { services_limit: 1, services: [IMAGES.nolisten] } });
    expect(job.status).toBe('failed');
    expect(job.trace).toContain('ERROR: Job failed: too many services requested: 2, only 1 allowed');
  }, 60_000);
});
