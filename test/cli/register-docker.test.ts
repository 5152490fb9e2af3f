import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/agent/config/index.js';
import { DOCKER_FLAGS } from '../../src/cli/docker-flags.js';
import { dockerDefaults } from '../../src/executors/docker/defaults.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { cli } from './cli.js';
import { workDirs } from './helpers.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t.close();
});

describe('register --executor docker', () => {
  it('writes GitLab Runner flags and environment into [runners.docker], which the loader reads back', async () => {
    const { root } = await workDirs();
    const config = join(root, 'config.toml');
    const reg = await cli(
      [
        'register', '-c', config, '--non-interactive', '--url', t.url, '-r', t.server.registrationToken, '--name', 'dock',
        '--executor', 'docker', '--docker-image', 'alpine:3.20',
        '--docker-pull-policy', 'always', '--docker-pull-policy', 'if-not-present',
        '--docker-volumes', '/srv/data:/data:ro', '--docker-volumes', '/cache',
        '--docker-privileged', '--docker-services', 'postgres:16', '--docker-shm-size', '268435456',
        '--docker-tmpfs', '/tmp:rw,size=64m', '--docker-wait-for-services-timeout', '-1', '--docker-cpus', '1.5',
        '--docker-user', '1000:1000',
      ],
      { env: { DOCKER_DISABLE_ENTRYPOINT_OVERWRITE: 'true', DOCKER_HOST: 'tcp://127.0.0.1:2375', DOCKER_ALLOWED_IMAGES: 'alpine:*, debian:*', DOCKER_MEMORY: '512m' } },
    );
    expect(reg.exitCode, reg.all).toBe(0);
    // A second entry after it: the docker table must stay with the first.
    const reg2 = await cli(['register', '-c', config, '--non-interactive', '--url', t.url, '-r', t.server.registrationToken, '--name', 'plain']);
    expect(reg2.exitCode, reg2.all).toBe(0);
    const text = await readFile(config, 'utf8');
    expect(text).toContain('  [runners.docker]\n    image = "alpine:3.20"');
    const { config: parsed, warnings } = parseConfig(text, config);
    expect(warnings).toEqual([]);
    expect(parsed.runners.map((r) => [r.name, r.executor])).toEqual([['dock', 'docker'], ['plain', 'shell']]);
    expect(parsed.runners[0]!.docker).toEqual({
      ...dockerDefaults(),
      image: 'alpine:3.20',
      pull_policy: ['always', 'if-not-present'],
      allowed_images: ['alpine:*', 'debian:*'],
      allowed_services: [],
      services: [{ name: 'postgres:16' }],
      wait_for_services_timeout: -1,
      privileged: true,
      user: '1000:1000',
      disable_entrypoint_overwrite: true,
      volumes: ['/srv/data:/data:ro', '/cache'],
      memory: '512m',
      cpus: '1.5',
      shm_size: 268435456,
      dns: [],
      extra_hosts: [],
      cap_add: [],
      cap_drop: [],
      devices: [],
      tmpfs: { '/tmp': 'rw,size=64m' },
      host: 'tcp://127.0.0.1:2375',
      disable_cache: false,
      cli: 'docker',
    });
    expect(parsed.runners[1]!.docker.image).toBeUndefined();
  });

  it('needs a default image and refuses a bad flag value before registering (exit 2)', async () => {
    const { root } = await workDirs();
    const config = join(root, 'config.toml');
    const base = ['register', '-c', config, '--non-interactive', '--url', t.url, '-r', t.server.registrationToken, '--executor', 'docker'];
    const noImage = await cli(base);
    expect(noImage.exitCode).toBe(2);
    expect(noImage.all).toContain('--docker-image or DOCKER_IMAGE');
    const bad = await cli([...base, '--docker-image', 'alpine', '--docker-pull-policy', 'sometimes']);
    expect(bad.exitCode).toBe(2);
    expect(bad.all).toMatch(/--docker-pull-policy: .*"if-not-present"/);
    await expect(readFile(config, 'utf8')).rejects.toThrow();
  });

  it('lists every docker flag with its environment name in --help', async () => {
    for (const command of ['register', 'run-once']) {
      const help = (await cli([command, '--help'])).all.replace(/\s+/g, ' ');
      for (const f of Object.values(DOCKER_FLAGS)) {
        // GitLab Runner reads a few with no environment name.
        if (f.env) expect(help).toMatch(new RegExp(`--${f.flag} (?:(?!--docker-).)*\\[env: ${f.env}[,\\]]`));
        else expect(help).toContain(`--${f.flag} `);
      }
    }
  });
});
