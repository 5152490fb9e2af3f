import { mkdtemp, readFile, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { jobDockerConfig, registryHost } from '../../src/executors/docker/registry-auth.js';

describe("a job's registry logins", () => {
  it('writes them to a private docker config beside the runner\'s own auths, and names it in DOCKER_CONFIG', async () => {
    const state = await mkdtemp(join(tmpdir(), 'registry-auth-'));
    const runnerConfig = await mkdtemp(join(tmpdir(), 'runner-docker-'));
    await writeFile(join(runnerConfig, 'config.json'), JSON.stringify({ auths: { 'docker.io': { auth: 'cnVubmVy' } }, credHelpers: { 'ecr.test': 'ecr-login' } }));
    const env = await jobDockerConfig(state, [
      { type: 'registry', url: 'https://registry.gitlab.test/v2/', username: 'gitlab-ci-token', password: 'job-token-1' },
      { type: 'other', url: 'x', username: 'y', password: 'z' },
    ], { DOCKER_CONFIG: runnerConfig });
    expect(env).toEqual({ DOCKER_CONFIG: join(state, 'docker-config') });
    const file = join(state, 'docker-config', 'config.json');
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(JSON.parse(await readFile(file, 'utf8'))).toEqual({
      auths: { 'docker.io': { auth: 'cnVubmVy' }, 'registry.gitlab.test': { auth: Buffer.from('gitlab-ci-token:job-token-1').toString('base64') } },
      credHelpers: { 'ecr.test': 'ecr-login' },
    });
  });

  it('changes nothing for a job without registry credentials', async () => {
    const state = await mkdtemp(join(tmpdir(), 'registry-auth-'));
    expect(await jobDockerConfig(state, [])).toEqual({});
  });

  it('reads the registry host from a URL or a host[:port]/path', () => {
    expect(registryHost('https://registry.example.com/v2/')).toBe('registry.example.com');
    expect(registryHost('registry.example.com:5050')).toBe('registry.example.com:5050');
    expect(registryHost('registry.example.com:5050/group/image')).toBe('registry.example.com:5050');
  });
});
