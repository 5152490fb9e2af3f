/**
 * `register --template-config FILE` as GitLab Runner 19 does it, through the real CLI and the reference
 * server: the template's one [[runners]] entry is merged under the flags and environment (a given value
 * wins unless it is Go's zero value), table by table, with keys register has no flag for written as they
 * are. Registered as the gitlab-runner Helm chart registers: environment names, a glrt- token, and the
 * chart's `runners.config` as the template.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/agent/config/index.js';
import { mergeUnder } from '../../src/cli/commands/register-template.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { raw } from '../server/raw-http.js';
import { cli } from './cli.js';
import { workDirs } from './helpers.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t.close();
});

async function createdRunner(): Promise<{ id: number; token: string }> {
  const response = await raw(t.url, 'POST', '/admin/api/runners', { json: { description: 'helm', run_untagged: true }, headers: { 'PRIVATE-TOKEN': t.server.adminToken } });
  expect(response.status, response.text).toBe(201);
  return JSON.parse(response.text) as { id: number; token: string };
}

/** The chart's values.yaml `runners.config`, rendered for a release in namespace "ci-jobs". */
const HELM_TEMPLATE = `[[runners]]
  name = "gitlab-runner-7c9f5b8d4-q2x7m"
  token = "from-an-older-release"
  [runners.kubernetes]
    namespace = "ci-jobs"
    image = "alpine"
    privileged = true
    [runners.kubernetes.node_selector]
      "kubernetes.io/os" = "linux"
  [runners.cache]
    Type = "s3"
    Shared = true
    [runners.cache.s3]
      ServerAddress = "s3.example.com"
      BucketName = "runner-cache"
      BucketLocation = "eu-west-1"
  [runners.feature_flags]
    FF_USE_FASTZIP = true
  [runners.custom_build_dir]
    enabled = true
`;

describe('register --template-config', () => {
  it('merges a Helm chart\'s template under the flags and environment, as GitLab Runner does', async () => {
    const { root } = await workDirs();
    const config = join(root, 'config.toml');
    const template = join(root, 'config.template.toml');
    await writeFile(template, HELM_TEMPLATE);
    const created = await createdRunner();
    // The chart's register step: `register --template-config ... --non-interactive`, the rest in the environment.
    const reg = await cli(['register', '--non-interactive', '-c', config, '--kubernetes-image', 'alpine:3.20', '--kubernetes-privileged=false'], {
      env: { TEMPLATE_CONFIG_FILE: template, CI_SERVER_URL: t.url, CI_SERVER_TOKEN: created.token, RUNNER_EXECUTOR: 'kubernetes' },
    });
    expect(reg.exitCode, reg.all).toBe(0);
    expect(reg.stderr).toContain(`Merging configuration from template file "${template}"`);
    const text = await readFile(config, 'utf8');
    const { config: parsed } = parseConfig(text, config);
    const entry = parsed.runners[0]!;
    // The template's token is never used; the name comes from it, the image from the flag.
    expect(entry).toMatchObject({ name: 'gitlab-runner-7c9f5b8d4-q2x7m', token: created.token, id: created.id, executor: 'kubernetes', url: t.url });
    expect(entry.kubernetes).toMatchObject({ namespace: 'ci-jobs', image: 'alpine:3.20', node_selector: { 'kubernetes.io/os': 'linux' } });
    // mergo fills Go's zero values: --kubernetes-privileged=false leaves the template's true (as in GitLab Runner).
    expect(entry.kubernetes.privileged).toBe(true);
    expect(entry.cache).toMatchObject({ Type: 's3', Shared: true, s3: { ServerAddress: 's3.example.com', BucketName: 'runner-cache', BucketLocation: 'eu-west-1' } });
    expect(entry.feature_flags).toMatchObject({ FF_USE_FASTZIP: true });
    expect(entry.custom_build_dir).toMatchObject({ enabled: true });
    expect(text).not.toContain('from-an-older-release');
    expect(text).toContain('  [runners.kubernetes.node_selector]');
  });

  it('warns about a template key ci-runner does not use with the template\'s line, and writes it as GitLab Runner would', async () => {
    const { root } = await workDirs();
    const config = join(root, 'config.toml');
    const template = join(root, 'template.toml');
    await writeFile(template, '[[runners]]\n  executor = "shell"\n  proxy_exec = true\n');
    const reg = await cli(['register', '-n', '-c', config, '--url', t.url, '-r', t.server.registrationToken, '--name', 'tpl-shell', '--template-config', template]);
    expect(reg.exitCode, reg.all).toBe(0);
    expect(reg.stderr).toContain(`WARNING: ${template}:3: \`proxy_exec\` is ignored`);
    const text = await readFile(config, 'utf8');
    expect(text).toContain('proxy_exec = true');
    expect(parseConfig(text, config).config.runners[0]).toMatchObject({ name: 'tpl-shell', executor: 'shell' });
  });

  it('refuses, before registering, a template without exactly one [[runners]] entry or with a value the loader refuses (exit 2)', async () => {
    const { root } = await workDirs();
    const config = join(root, 'config.toml');
    const template = join(root, 'template.toml');
    const register = () => cli(['register', '-n', '-c', config, '--url', 'http://127.0.0.1:9/', '-r', 'x', '--template-config', template]);
    await writeFile(template, 'concurrent = 4\n');
    const none = await register();
    expect(none.exitCode, none.all).toBe(2);
    expect(none.stderr).toContain('configuration template must contain exactly one [[runners]] entry');
    await writeFile(template, '[[runners]]\n  executor = "kubernetes"\n  [runners.kubernetes]\n    memory_limit = "lots"\n');
    const bad = await register();
    expect(bad.exitCode, bad.all).toBe(2);
    expect(bad.stderr).toContain(`${template}:4`);
    expect(bad.stderr).toContain('memory_limit');
    const missing = await cli(['register', '-n', '-c', config, '--url', t.url, '-r', 'x', '--template-config', join(root, 'nope.toml')]);
    expect(missing.exitCode, missing.all).toBe(2);
    expect(missing.stderr).toContain("couldn't load configuration template file");
  });
});

describe('mergeUnder (mergo\'s defaults)', () => {
  it('fills what is missing or zero, merges tables key by key, and takes lists whole', () => {
    const merged = mergeUnder(
      { name: 'flag', limit: 0, docker: { image: 'a', volumes: [] }, environment: ['A=1'] },
      { name: 'tpl', limit: 4, docker: { image: 'b', volumes: ['/cache'], privileged: true }, environment: ['B=2'], clone_url: 'https://x' },
    );
    expect(merged).toEqual({ name: 'flag', limit: 4, docker: { image: 'a', volumes: ['/cache'], privileged: true }, environment: ['A=1'], clone_url: 'https://x' });
  });
});
