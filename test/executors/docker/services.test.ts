/**
 * Services: reachable from the build by GitLab Runner's aliases on the job's network, configured by
 * the job's public variables (never a secret, never its token) and their own, and waited for up to wait_for_services_timeout.
 */
import { describe, expect, it } from 'vitest';
import { serviceAliases } from '../../../src/executors/common/service-aliases.js';
import { waitUntil } from '../../cli/helpers.js';
import type { TestServer } from '../../helpers/server.js';
import { docker, IMAGES, jobLabels, labelled, skipDocker } from './engine.js';
import { runDockerJob, startDockerJob, useDockerTestServer } from './jobs.js';

let t: TestServer;
let token: string;
useDockerTestServer((server, runnerToken) => {
  t = server;
  token = runnerToken;
});

describe('service aliases', () => {
  it('names a service as GitLab Runner does', () => {
    expect(serviceAliases({ name: 'postgres:9.6' })).toEqual(['postgres']);
    expect(serviceAliases({ name: 'registry.example.com/group/redis:3' })).toEqual(['registry.example.com__group__redis', 'registry.example.com-group-redis']);
    expect(serviceAliases({ name: 'registry.example.com:5000/redis@sha256:abc', alias: 'cache' })).toEqual(['registry.example.com:5000__redis', 'registry.example.com:5000-redis', 'cache']);
  });
});

describe.skipIf(skipDocker)('docker services', () => {
  it('reaches a service by each alias, and gives it the job\'s public variables (not to the docker CLI that starts it) but no secret and not the job token', async () => {
    const yaml = [
      'j:',
      '  variables:',
      '    SERVICE_PASSWORD: pw-for-the-service',
      // DOCKER_HOST would send the CLI to nowhere, were it in the CLI's own environment.
      '    DOCKER_HOST: tcp://127.0.0.1:1',
      '    SERVICE_CERT: "line one\\nline two"',
      '  services:',
      `    - name: ${IMAGES.httpd}`,
      '      variables:',
      // The service's own variables may name a secret: an opt-in by whoever wrote them (GitLab Runner's GetServiceVariables).
      '        OWN_FROM_SECRET: "$PROJECT_SECRET"',
      '  script:',
      '    - wget -q -O - http://ci-runner-test__httpd/',
      '    - wget -q -O - http://ci-runner-test-httpd/',
      '    - wget -q -O - http://web/',
      '    - sleep 2',
      '',
    ].join('\n');
    const job = await startDockerJob(t, token, yaml, {
      docker: { services: [{ name: IMAGES.httpd, alias: 'web' }] },
      // A pipeline variable: GitLab sends it with public: false, as a project's CI/CD variables.
      variables: { PROJECT_SECRET: 'project-secret-value' },
    });
    let envs: string[][] = [];
    await waitUntil(async () => {
      const names = (await labelled(...jobLabels(token, job.id))).containers.filter((n) => n.includes('-service-'));
      if (names.length < 2) return false;
      envs = await Promise.all(names.map(async (name) => JSON.parse(await docker(['inspect', '--format', '{{json .Config.Env}}', name])) as string[]));
      return true;
    }, 60_000, 'the service containers');
    const { status, trace } = await job.done;
    expect(status, trace).toBe('success');
    expect(trace.match(/hello from the service/g)).toHaveLength(3);
    expect(trace).toMatch(/Waited for services for \d+\.\d s/);
    for (const env of envs) {
      expect(env).toContain('SERVICE_PASSWORD=pw-for-the-service');
      expect(env).toContain('DOCKER_HOST=tcp://127.0.0.1:1');
      expect(env).toContain('SERVICE_CERT=line one\nline two');
      expect(env).toContain(`CI_JOB_ID=${job.id}`);
      expect(env.filter((e) => e.includes('project-secret-value') && !e.startsWith('OWN_FROM_SECRET='))).toEqual([]);
      expect(env.some((e) => e.startsWith('CI_BUILD_TOKEN=') || e.startsWith('CI_JOB_TOKEN=') || e.startsWith('CI_BUILD_REPO=') || e.startsWith('CI_REPOSITORY_URL='))).toBe(false);
    }
    expect(envs.flat()).toContain('OWN_FROM_SECRET=project-secret-value');
    expect(await labelled(...jobLabels(token, job.id))).toEqual({ containers: [], networks: [] });
  }, 90_000);

  it('warns with the service log when a service never listens, and runs the job anyway', async () => {
    const { status, trace } = await runDockerJob(t, token, `j:\n  services:\n    - ${IMAGES.nolisten}\n  script:\n    - echo job went on\n`, { docker: { wait_for_services_timeout: 2 } });
    expect(status, trace).toBe('success');
    expect(trace).toContain(`*** WARNING: Service ${IMAGES.nolisten} probably didn't start properly`);
    expect(trace).toContain(':5432 within 2 seconds');
    expect(trace).toContain('service starting but never listening');
    expect(trace).toContain('job went on');
  }, 60_000);
});
