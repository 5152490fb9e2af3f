import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/agent/config/index.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { CLI } from './cli.js';
import { workDirs } from './helpers.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t.close();
});

describe('register at a terminal', () => {
  it('prompts for the values flags and environment leave out', async () => {
    const { root } = await workDirs();
    const config = join(root, 'config.toml');
    // `script` gives the CLI a pseudo-terminal, the way a person would run it.
    const result = await execa('script', ['-qec', `node ${CLI} register -c ${config} --url ${t.url}`, '/dev/null'], {
      input: `${t.server.registrationToken}\nprompted-box\nlinux, big\n\n`,
      reject: false,
      env: { TERM: 'dumb' },
    });
    expect(result.exitCode, result.stdout).toBe(0);
    expect(result.stdout).toContain('Please enter the registration token');
    expect(result.stdout).not.toContain('Please enter the coordinator URL');
    const parsed = parseConfig(await readFile(config, 'utf8'), config).config;
    expect(parsed.runners[0]).toMatchObject({ name: 'prompted-box', url: t.url, executor: 'shell' });
  });

  it('asks for the default image when the executor is docker, until one is given', async () => {
    const { root } = await workDirs();
    const config = join(root, 'config.toml');
    const result = await execa('script', ['-qec', `node ${CLI} register -c ${config} --url ${t.url} --docker-pull-policy if-not-present`, '/dev/null'], {
      input: `${t.server.registrationToken}\ndocker-box\n\ndocker\n\nalpine:3.20\n`,
      reject: false,
      env: { TERM: 'dumb' },
    });
    expect(result.exitCode, result.stdout).toBe(0);
    expect(result.stdout).toContain('Please enter the executor: shell, docker');
    expect(result.stdout.match(/Please enter the default Docker image/g)).toHaveLength(2);
    const parsed = parseConfig(await readFile(config, 'utf8'), config).config;
    expect(parsed.runners[0]).toMatchObject({ name: 'docker-box', executor: 'docker', docker: { image: 'alpine:3.20', pull_policy: ['if-not-present'] } });
  });
});
