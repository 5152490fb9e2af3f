import { mkdtemp, readFile, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { jobDockerConfig, registryHost } from '../../src/executors/docker/registry-auth.js';
import { dockerAuthConfig } from '../../src/executors/common/docker-auth-config.js';
import { registryConfig } from '../../src/executors/kubernetes/secrets.js';

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

  it('takes DOCKER_AUTH_CONFIG first, the runner\'s own config next, the job\'s credentials last, as GitLab Runner 19', async () => {
    const state = await mkdtemp(join(tmpdir(), 'registry-auth-'));
    const runnerConfig = await mkdtemp(join(tmpdir(), 'runner-docker-'));
    await writeFile(join(runnerConfig, 'config.json'), JSON.stringify({ auths: { 'registry.gitlab.test': { auth: 'cnVubmVy' } }, credHelpers: { 'private.test': 'ecr-login', 'ecr.test': 'ecr-login' } }));
    const fromVariable = dockerAuthConfig(JSON.stringify({ auths: { 'private.test': { username: 'u', password: 'p' }, 'other.test': { auth: 'b3RoZXI=' } } }));
    expect(fromVariable.warnings).toEqual([]);
    await jobDockerConfig(state, [
      { type: 'registry', url: 'registry.gitlab.test', username: 'gitlab-ci-token', password: 'job-token-1' },
      { type: 'registry', url: 'ci-only.test', username: 'gitlab-ci-token', password: 'job-token-1' },
    ], { DOCKER_CONFIG: runnerConfig }, fromVariable.auths);
    expect(JSON.parse(await readFile(join(state, 'docker-config', 'config.json'), 'utf8'))).toEqual({
      auths: {
        'registry.gitlab.test': { auth: 'cnVubmVy' },
        'ci-only.test': { auth: Buffer.from('gitlab-ci-token:job-token-1').toString('base64') },
        'private.test': { auth: Buffer.from('u:p').toString('base64') },
        'other.test': { auth: 'b3RoZXI=' },
      },
      // The runner's helper for private.test would beat the variable's login in the docker CLI.
      credHelpers: { 'ecr.test': 'ecr-login' },
    });
    expect(JSON.parse(registryConfig([{ type: 'registry', url: 'private.test', username: 'x', password: 'y' }], fromVariable.auths)!)).toEqual({ auths: fromVariable.auths });
  });

  it('leaves out what DOCKER_AUTH_CONFIG asks to run on the host, and never repeats the value', () => {
    const value = JSON.stringify({ auths: { 'a.test': { auth: 'c2VjcmV0' } }, credsStore: 'desktop', credHelpers: { 'b.test': 'pass' } });
    const parsed = dockerAuthConfig(value);
    expect(parsed.auths).toEqual({ 'a.test': { auth: 'c2VjcmV0' } });
    expect(parsed.warnings).toEqual(['$DOCKER_AUTH_CONFIG: credsStore and credHelpers are not used (they would run a program on the runner\'s host); give the logins in "auths"']);
    const broken = dockerAuthConfig('{"auths": {"a.test": {"auth": "c2VjcmV0"');
    expect(broken.auths).toEqual({});
    expect(broken.warnings.join()).not.toContain('c2VjcmV0');
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
