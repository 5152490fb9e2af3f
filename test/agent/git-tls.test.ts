/** The runner's TLS material for git: scoped to the coordinator, in files only for get_sources. */
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gitSourcesCommands } from '../../src/agent/job/git-sources.js';
import { writeGitTls } from '../../src/agent/job/git-tls.js';
import type { BuildPayload } from '../../src/protocol/types.js';

const material = { ca: 'CA PEM\n', cert: 'CERT PEM\n', key: 'KEY PEM\n' };
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ci-runner-git-tls-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('git TLS for get_sources', () => {
  it('writes the files owner-only, scopes them to the coordinator\'s origin and removes them on request', async () => {
    const written = await writeGitTls('https://ci.example.com:8443/gitlab/', material, dir);
    expect(written?.tls).toEqual({ scope: 'https://ci.example.com:8443/', caFile: join(dir, 'git-tls-ca.pem'), certFile: join(dir, 'git-tls-cert.pem'), keyFile: join(dir, 'git-tls-key.pem') });
    expect((await stat(join(dir, 'git-tls-key.pem'))).mode & 0o777).toBe(0o600);
    const build = { repo_url: 'https://gitlab-ci-token:secret@ci.example.com:8443/group/project.git', ref: 'main', sha: 'a'.repeat(40), tag: false } as BuildPayload;
    const script = gitSourcesCommands({ build, projectDir: '/p', strategy: 'clone', depth: 0, submodules: 'normal', tls: written!.tls }).join('\n');
    expect(script).toContain("GIT_CONFIG_KEY_1='http.https://ci.example.com:8443/.sslCAInfo'");
    expect(script).toContain("GIT_CONFIG_KEY_2='http.https://ci.example.com:8443/.sslCert'");
    expect(script).toContain("GIT_CONFIG_KEY_3='http.https://ci.example.com:8443/.sslKey'");
    expect(script).toContain('unset GIT_SSL_CAINFO');
    expect(script).not.toMatch(/git config --global|http\.sslCAInfo /);
    await written!.remove();
    expect(await readdir(dir)).toEqual([]);
  });

  it('gives git nothing for a plain-http coordinator or without material', async () => {
    expect(await writeGitTls('http://ci.example.com/', material, dir)).toBeUndefined();
    expect(await writeGitTls('https://ci.example.com/', {}, dir)).toBeUndefined();
    expect(await readdir(dir)).toEqual([]);
  });
});
