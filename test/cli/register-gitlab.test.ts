import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/agent/config/index.js';
import { REGISTER_FLAGS } from '../../src/cli/commands/register-options.js';
import { envNames } from '../../src/cli/env-options.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { mountTmpfs } from '../helpers/tmpfs.js';
import { cli, CLI } from './cli.js';
import { workDirs } from './helpers.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t.close();
});

interface RunnerRow { description: string; tags: string[]; run_untagged: boolean; locked: boolean; access_level: string; maximum_timeout: number | null; paused: boolean; maintenance_note: string | null }

async function serverRunners(): Promise<RunnerRow[]> {
  const response = await fetch(`${t.url}/admin/api/runners`, { headers: { 'PRIVATE-TOKEN': t.server.adminToken } });
  return (await response.json()) as RunnerRow[];
}

/** At a pseudo-terminal, as a person types it: anything that prompts would wait for input. */
function atTerminal(line: string, env: Record<string, string> = {}) {
  return execa('script', ['-qec', `node ${CLI} ${line}`, '/dev/null'], { input: '', reject: false, env: { TERM: 'dumb', ...env } });
}

describe('register as GitLab Runner users type it', () => {
  it('takes -n as --non-interactive and --description as the name, never prompting at a terminal', async () => {
    const { root } = await workDirs();
    const config = join(root, 'config.toml');
    const result = await atTerminal(`register -n -c ${config} --url ${t.url} -r ${t.server.registrationToken} --description gl-box --executor shell`);
    expect(result.exitCode, result.stdout).toBe(0);
    expect(result.stdout).not.toContain('Please enter');
    expect(parseConfig(await readFile(config, 'utf8'), config).config.runners[0]).toMatchObject({ name: 'gl-box' });
  });

  it('writes request_concurrency, the pre/post scripts and repeated --env to config.toml', async () => {
    const { root } = await workDirs();
    const config = join(root, 'config.toml');
    const result = await cli([
      'register', '-n', '-c', config, '--url', t.url, '-r', t.server.registrationToken, '--name', 'scripts',
      '--request-concurrency', '3', '--pre-clone-script', 'echo pre-clone', '--pre-build-script', 'echo pre-build\necho second line',
      '--post-build-script', 'echo post-build', '--env', 'A=1', '--env', 'NO_PROXY=a,b',
    ]);
    expect(result.exitCode, result.all).toBe(0);
    // As GitLab Runner warns: the global concurrent (1 in a new file) caps it.
    expect(result.stderr).toContain('WARNING: --request-concurrency 3 is more than concurrent = 1 in config.toml');
    expect(parseConfig(await readFile(config, 'utf8'), config).config.runners[0]).toMatchObject({
      request_concurrency: 3,
      pre_get_sources_script: 'echo pre-clone',
      pre_build_script: 'echo pre-build\necho second line',
      post_build_script: 'echo post-build',
      environment: ['A=1', 'NO_PROXY=a,b'],
    });
  });

  it('honours every environment name it reads, each listed in --help', async () => {
    const { root, builds, cache } = await workDirs();
    const config = join(root, 'etc', 'config.toml');
    const env: Record<string, string> = {
      CONFIG_FILE: config,
      REGISTER_NON_INTERACTIVE: 'true',
      CI_SERVER_URL: t.url,
      REGISTRATION_TOKEN: t.server.registrationToken,
      RUNNER_NAME: 'from-env',
      RUNNER_TAG_LIST: 'env-a, env-b',
      REGISTER_RUN_UNTAGGED: 'true',
      REGISTER_LOCKED: 'false',
      REGISTER_LEAVE_RUNNER: 'true',
      RUNNER_EXECUTOR: 'shell',
      RUNNER_SHELL: 'sh',
      RUNNER_BUILDS_DIR: builds,
      RUNNER_CACHE_DIR: cache,
      RUNNER_LIMIT: '4',
      RUNNER_REQUEST_CONCURRENCY: '2',
      RUNNER_OUTPUT_LIMIT: '8192',
      RUNNER_ENV: 'X=1\nY=two, three',
      RUNNER_PRE_CLONE_SCRIPT: 'echo env-pre-clone',
      RUNNER_PRE_BUILD_SCRIPT: 'echo env-pre-build',
      RUNNER_POST_BUILD_SCRIPT: 'echo env-post-build',
      REGISTER_ACCESS_LEVEL: 'not_protected',
      REGISTER_PAUSED: 'false',
      REGISTER_MAXIMUM_TIMEOUT: '0',
      REGISTER_MAINTENANCE_NOTE: 'a note',
      RUNNER_API: 'auto',
    };
    // The test sets every name the flag table reads (a new flag must be added here too); CI_SERVER_TOKEN: the next test;
    // TEMPLATE_CONFIG_FILE: register-template.test.ts; CUSTOM_BUILD_DIR_ENABLED: register-custom.test.ts.
    expect([...Object.keys(env), 'CI_SERVER_TOKEN', 'TEMPLATE_CONFIG_FILE', 'CUSTOM_BUILD_DIR_ENABLED'].sort()).toEqual(envNames(REGISTER_FLAGS).sort());
    const help = await cli(['register', '--help']);
    for (const name of envNames(REGISTER_FLAGS)) expect(help.stdout).toContain(name);

    // At a terminal, so REGISTER_NON_INTERACTIVE is what keeps it from prompting.
    const result = await atTerminal('register', env);
    expect(result.exitCode, result.stdout).toBe(0);
    // Over v4 (the server answers it) the note is sent; over v1 a warning would say it is not.
    expect(result.stdout).not.toContain('maintenance-note');
    const runner = parseConfig(await readFile(config, 'utf8'), config).config.runners[0];
    expect(runner).toMatchObject({
      name: 'from-env', url: t.url, executor: 'shell', shell: 'sh', builds_dir: builds, cache_dir: cache, limit: 4,
      request_concurrency: 2, output_limit: 8192, environment: ['X=1', 'Y=two, three'],
      pre_get_sources_script: 'echo env-pre-clone', pre_build_script: 'echo env-pre-build', post_build_script: 'echo env-post-build',
    });
    expect((await serverRunners()).find((r) => r.description === 'from-env')).toMatchObject({ tags: ['env-a', 'env-b'], run_untagged: true, locked: false, maintenance_note: 'a note' });
  });

  it('adds a runner that exists on the coordinator with --token (or CI_SERVER_TOKEN) after verifying it, registering nothing', async () => {
    const { root } = await workDirs();
    const config = join(root, 'config.toml');
    const { token } = await t.registerRunner();
    const before = (await serverRunners()).length;
    const added = await cli(['register', '-n', '-c', config, '--url', t.url, '--token', token, '--name', 'adopted']);
    expect(added.exitCode, added.all).toBe(0);
    expect(parseConfig(await readFile(config, 'utf8'), config).config.runners[0]).toMatchObject({ name: 'adopted', token });
    expect((await serverRunners()).length).toBe(before);

    const unknown = await cli(['register', '-n', '-c', config, '--url', t.url, '--name', 'ghost'], { env: { CI_SERVER_TOKEN: 'no-such-runner-token' } });
    expect(unknown.exitCode, unknown.all).toBe(3);
    expect(unknown.stderr).toContain('does not know this runner token');
    expect(parseConfig(await readFile(config, 'utf8'), config).config.runners.map((r) => r.name)).toEqual(['adopted']);
  });

  it('refuses an environment value it cannot use, naming the variable, before registering', async () => {
    const { root } = await workDirs();
    const before = (await serverRunners()).length;
    const base = { CONFIG_FILE: join(root, 'config.toml'), CI_SERVER_URL: t.url, REGISTRATION_TOKEN: t.server.registrationToken };
    for (const [name, value] of [['RUNNER_LIMIT', 'lots'], ['RUNNER_EXECUTOR', 'ssh'], ['REGISTER_LOCKED', 'maybe'], ['RUNNER_ENV', 'not a variable']] as const) {
      const result = await cli(['register', '-n'], { env: { ...base, [name]: value } });
      expect(result.exitCode, result.all).toBe(2);
      expect(result.stderr).toContain(name === 'RUNNER_ENV' ? 'RUNNER_ENV: a "NAME=value" string' : `${name}="${value}"`);
    }
    expect((await serverRunners()).length).toBe(before);
  });

  it('accepts the command line of GitLab Runner\'s docs, sends its settings over v4, and refuses over v1 what v1 cannot register', async () => {
    const { root } = await workDirs();
    const config = join(root, 'config.toml');
    const line = [
      'register', '--config', config, '--non-interactive', '--url', t.url, '--registration-token', t.server.registrationToken,
      '--executor', 'docker', '--docker-image', 'alpine:latest', '--description', 'docker-runner', '--maintenance-note', 'Free-form maintainer notes',
      '--tag-list', 'docker,aws', '--run-untagged=true', '--locked=false', '--access-level=not_protected',
    ];
    const result = await cli(line);
    expect(result.exitCode, result.all).toBe(0);
    expect((await serverRunners()).find((r) => r.description === 'docker-runner')).toMatchObject({ tags: ['docker', 'aws'], run_untagged: true, locked: false });
    const settings = ['--access-level', 'ref_protected', '--paused', '--maximum-timeout', '3600'];
    const v4 = await cli([...line.map((arg) => (arg === 'docker-runner' ? 'protected-runner' : arg)), ...settings]);
    expect(v4.exitCode, v4.all).toBe(0);
    expect((await serverRunners()).find((r) => r.description === 'protected-runner')).toMatchObject({ access_level: 'ref_protected', paused: true, maximum_timeout: 3600 });
    const before = (await serverRunners()).length;
    for (const extra of [['--access-level', 'ref_protected'], ['--paused'], ['--maximum-timeout', '3600']]) {
      const refused = await cli([...line, '--api', 'v1', ...extra]);
      expect(refused.exitCode, refused.all).toBe(2);
      expect(refused.stderr).toContain('the v1 runner API cannot register it so');
    }
    expect((await serverRunners()).length).toBe(before);
  });

  it('refuses an unknown flag (exit 2)', async () => {
    const result = await cli(['register', '-n', '--url', t.url, '-r', t.server.registrationToken, '--bogus-flag']);
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toMatch(/Unknown argument.*bogus-flag/);
  });

  it('unregisters the runner when config.toml cannot be written, and keeps it with --leave-runner', async (ctx) => {
    const fs = await mountTmpfs(1);
    if ('skip' in fs) {
      console.warn(fs.skip);
      ctx.skip();
      return;
    }
    try {
      // Fill the file system: the config can be read (it does not exist) but not written.
      await writeFile(join(fs.dir, 'filler'), Buffer.alloc(2 * 1024 * 1024)).catch(() => undefined);
      const config = join(fs.dir, 'config.toml');
      const args = ['register', '-n', '-c', config, '--url', t.url, '-r', t.server.registrationToken];
      const undone = await cli([...args, '--name', 'undone']);
      expect(undone.exitCode, undone.all).toBe(2);
      expect(undone.stderr).toContain('the runner was unregistered again');
      expect((await serverRunners()).some((r) => r.description === 'undone')).toBe(false);

      const left = await cli([...args, '--name', 'left', '--leave-runner']);
      expect(left.exitCode, left.all).toBe(2);
      expect((await serverRunners()).some((r) => r.description === 'left')).toBe(true);
      const token = /token = "([^"]+)"/.exec(left.stderr)?.[1];
      expect(token, left.stderr).toBeDefined();
      // The printed token is the live runner's: polling with it finds no job rather than a 403.
      const poll = await cli(['run-once', '--url', t.url, '--token', token!, '--wait-timeout', '1s']);
      expect(poll.exitCode, poll.all).toBe(4);
    } finally {
      await fs.unmount();
    }
  });
});
