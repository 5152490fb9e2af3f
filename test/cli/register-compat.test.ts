/**
 * `register` and GitLab Runner 19.3's every register flag: each is honoured (declared by
 * register-options.ts, docker-flags.ts, kubernetes-flags.ts, custom-flags.ts, cache-flags.ts or tls-flags.ts), accepted with a warning, or refused with
 * the reason. The list in test/fixtures comes from GitLab Runner's source, so a flag cannot slip.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CACHE_FLAGS } from '../../src/cli/cache-flags.js';
import { DOCKER_FLAGS } from '../../src/cli/docker-flags.js';
import { KUBERNETES_FLAGS } from '../../src/cli/kubernetes-flags.js';
import { CUSTOM_FLAGS } from '../../src/cli/custom-flags.js';
import { REGISTER_COMPAT_FLAGS } from '../../src/cli/commands/register-compat.js';
import { REGISTER_FLAGS } from '../../src/cli/commands/register-options.js';
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

const TLS = ['tls-ca-file', 'tls-cert-file', 'tls-key-file'];

describe("register: GitLab Runner 19.3's flags", () => {
  it('declares every one of them: honoured, warned or refused', async () => {
    const text = await readFile(new URL('../fixtures/gitlab-runner-19.3-register-flags.txt', import.meta.url), 'utf8');
    const gitlab = text.split('\n').filter((line) => line !== '' && !line.startsWith('#'));
    expect(gitlab.length).toBeGreaterThan(300);
    const honoured = new Set([...REGISTER_FLAGS.flatMap((f) => [f.flag, ...[f.alias ?? []].flat()]), ...Object.values(DOCKER_FLAGS).map((f) => f.flag), ...CACHE_FLAGS.map((f) => f.flag), ...KUBERNETES_FLAGS.map((f) => f.flag), ...CUSTOM_FLAGS.map((f) => f.flag), ...TLS]);
    const compat = new Map(REGISTER_COMPAT_FLAGS.map((f) => [f.flag, f]));
    const missing = gitlab.filter((flag) => !honoured.has(flag) && !compat.has(flag));
    expect(missing).toEqual([]);
    for (const f of REGISTER_COMPAT_FLAGS) {
      expect(honoured.has(f.flag), `${f.flag} is honoured and in the compat table`).toBe(false);
      expect(f.support?.status, f.flag).toMatch(/^(warned|refused)$/);
    }
    expect(compat.get('ssh-host')?.support?.status).toBe('refused');
    expect(compat.get('kubernetes-helper-image')?.support?.status).toBe('warned');
    expect(KUBERNETES_FLAGS.every((f) => gitlab.includes(f.flag)), 'every --kubernetes-* flag is GitLab Runner\'s').toBe(true);
    expect(CUSTOM_FLAGS.every((f) => gitlab.includes(f.flag)), 'every --custom-* flag is GitLab Runner\'s').toBe(true);
  });

  it('registers with the --kubernetes-* flags of a helper container, warning once for each with the reason', async () => {
    const { root } = await workDirs();
    const config = join(root, 'config.toml');
    const reg = await cli(['register', '-c', config, '-n', '--url', t.url, '-r', t.server.registrationToken, '--name', 'compat', '--kubernetes-helper-image', 'alpine'], { env: { CUSTOM_RUN_EXEC: '/bin/run' } });
    expect(reg.exitCode, reg.all).toBe(0);
    expect(reg.stderr).toContain("WARNING: --kubernetes-helper-image is ignored: ci-runner's kubernetes executor has no helper container");
    // The environment names GitLab Runner reads for them are warned about too.
    expect(reg.stderr).toContain('WARNING: CUSTOM_RUN_EXEC is ignored: the executor is shell, not custom');
  });

  it('refuses the flags of an executor ci-runner does not have (exit 2) before asking the coordinator', async () => {
    const { root } = await workDirs();
    const config = join(root, 'config.toml');
    const reg = await cli(['register', '-c', config, '-n', '--url', 'http://127.0.0.1:9/', '-r', 'x', '--ssh-host', 'build.example.com']);
    expect(reg.exitCode, reg.all).toBe(2);
    expect(reg.stderr).toContain('--ssh-host: the ssh executor is not available in ci-runner');
  });
});
