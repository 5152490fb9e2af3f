import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runnerFromFlags } from '../../src/cli/commands/run-once.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { cli } from './cli.js';
import { workDirs } from './helpers.js';
import { fakeDockerCli } from '../helpers/fake-docker-cli.js';

const base = { url: 'http://127.0.0.1:1/', token: 'tok', name: 'run-once', shell: 'bash', 'builds-dir': 'builds', 'cache-dir': 'cache', 'output-limit': 4096, env: [], 'artifacts-format': 'tar.gz' };

describe('run-once --executor docker options', () => {
  it('builds the same docker options as a [runners.docker] table, from flags and then the environment', () => {
    const runner = runnerFromFlags(
      {
        ...base,
        executor: 'docker',
        'docker-image': 'alpine:3.20',
        'docker-pull-policy': ['if-not-present', 'always'],
        'docker-services': ['postgres:16'],
        'docker-volumes': ['/srv:/srv:ro'],
        'docker-privileged': true,
        'docker-tmpfs': ['{"/tmp":"rw,size=64m"}'],
        'docker-wait-for-services-timeout': 0,
      },
      { DOCKER_IMAGE: 'ignored:because-the-flag-wins', DOCKER_CAP_DROP: 'NET_RAW,MKNOD', DOCKER_HOST: 'unix:///run/docker.sock', DOCKER_CLI: 'podman' },
    );
    expect(runner.executor).toBe('docker');
    expect(runner.docker).toMatchObject({
      image: 'alpine:3.20',
      pull_policy: ['if-not-present', 'always'],
      services: [{ name: 'postgres:16' }],
      volumes: ['/srv:/srv:ro'],
      privileged: true,
      tmpfs: { '/tmp': 'rw,size=64m' },
      wait_for_services_timeout: 30,
      cap_drop: ['NET_RAW', 'MKNOD'],
      host: 'unix:///run/docker.sock',
      cli: 'podman',
    });
  });

  it('leaves docker settings of the environment out of a shell run', () => {
    const runner = runnerFromFlags({ ...base, executor: 'shell' }, { DOCKER_IMAGE: 'alpine', DOCKER_PULL_POLICY: 'sometimes' });
    expect(runner.docker.image).toBeUndefined();
    expect(runner.docker.pull_policy).toEqual(['always']);
  });

  it('names the flag of a bad value', () => {
    expect(() => runnerFromFlags({ ...base, executor: 'docker', 'docker-pull-policy': ['sometimes'] }, {})).toThrow(/--docker-pull-policy: .*"never"/);
    expect(() => runnerFromFlags({ ...base, executor: 'docker', 'docker-volumes': ['relative'] }, {})).toThrow(/--docker-volumes: /);
    expect(() => runnerFromFlags({ ...base, executor: 'docker', 'docker-shm-size': 'big' }, {})).toThrow(/--docker-shm-size: expects a number$/);
    expect(() => runnerFromFlags({ ...base, executor: 'docker' }, { DOCKER_SHM_SIZE: '64m' })).toThrow(/--docker-shm-size: expects a number \(DOCKER_SHM_SIZE="64m"\)/);
  });
});

describe('run-once --executor docker', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer();
  });
  afterAll(async () => {
    await t.close();
  });

  it('refuses to take a job when the engine does not answer (exit 2), saying why', async () => {
    const d = await workDirs();
    const { token } = await t.registerRunner();
    const p = await t.pipeline('j:\n  script:\n    - echo never\n');
    const result = await cli(['run-once', '--url', t.url, '--token', token, '--builds-dir', d.builds, '--executor', 'docker', '--docker-image', 'alpine', '--docker-cli', await fakeDockerCli(d.root), '--wait-timeout', '5s']);
    expect(result.exitCode, result.all).toBe(2);
    expect(result.all).toContain('cannot run docker jobs: the docker engine does not answer: Cannot connect to the Docker daemon');
    expect(t.server.getJob(p.jobs[0]!.id)?.status).toBe('pending');
    t.server.cancelJob(p.jobs[0]!.id);
  });

  it('exits 2 naming the flag of a bad docker value', async () => {
    const result = await cli(['run-once', '--url', 'http://127.0.0.1:1/', '--token', 'x', '--executor', 'docker', '--docker-pull-policy', 'sometimes']);
    expect(result.exitCode).toBe(2);
    expect(result.all).toMatch(/--docker-pull-policy: /);
  });
});
