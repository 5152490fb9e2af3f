/**
 * The real things a browser test of the web page needs: `ci-runner serve` and `ci-runner run` as
 * processes (built CLI), a git project with a pipeline file, and Debian's Chromium driven by
 * playwright-core. Screenshots go to `test-artifacts/ui/` for people (and CI) to look at.
 */
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { chromium, type Browser, type Page } from 'playwright-core';
import { RunnerApiClient } from '../../src/client/runner-api.js';
import { CLI, NODE_CLI } from '../cli/cli.js';
import { waitUntil, workDirs } from '../cli/helpers.js';

export const SCREENSHOTS = fileURLToPath(new URL('../../test-artifacts/ui/', import.meta.url));
export const ADMIN_TOKEN = 'ui-test-admin-token-0123456789';
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export function chromiumMissing(): string | undefined {
  return existsSync(CHROMIUM) ? undefined : `${CHROMIUM} is missing (apt-get install chromium, or set CHROMIUM_PATH)`;
}

export interface Served {
  url: string;
  output(): string;
  stop(): Promise<void>;
}

/** `ci-runner serve` on a free port with one project; resolves once its ready block names the page. */
export async function startServe(projectPath: string): Promise<Served> {
  const child = execa('node', [...NODE_CLI, 'serve', '--port', '0', '--admin-token', ADMIN_TOKEN, '--registration-token', 'ui-test-registration', '--project', `acme/app=${projectPath}`, '--log-level', 'warn'], {
    reject: false,
    all: true,
    stdin: 'ignore',
  });
  let output = '';
  child.all?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  await waitUntil(() => /Web page: +http:\/\/\S+\//.test(output) || child.exitCode !== null, 30_000, 'serve ready');
  const url = /Web page: +(http:\/\/\S+)\//.exec(output)?.[1];
  if (!url) throw new Error(`serve did not print its page: ${output}`);
  return {
    url,
    output: () => output,
    stop: async () => {
      child.kill('SIGTERM');
      await child;
    },
  };
}

export interface Daemon {
  output(): string;
  stop(): Promise<void>;
}

/** Registers a runner with the server and starts `ci-runner run` for it (shell executor). */
export async function startRunner(url: string, name: string): Promise<Daemon> {
  const client = new RunnerApiClient({ url });
  const registered = await client.registerRunner({ token: 'ui-test-registration', description: name, tagList: [], runUntagged: true });
  if (!registered.runner) throw new Error(`registration failed: ${registered.status}`);
  const dirs = await workDirs();
  await mkdir(dirs.root, { recursive: true });
  const config = join(dirs.root, 'config.toml');
  await writeFile(
    config,
    `concurrent = 4\ncheck_interval = 1\nlog_format = "json"\n[[runners]]\n  name = "${name}"\n  url = "${url}"\n  token = "${registered.runner.token}"\n  executor = "shell"\n  builds_dir = "${dirs.builds}"\n  cache_dir = "${dirs.cache}"\n  limit = 4\n  trace_keepalive_interval = 1\n`,
  );
  const child = execa('node', [...NODE_CLI, 'run', '-c', config], { reject: false, all: true, stdin: 'ignore' });
  let output = '';
  child.all?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return {
    output: () => output,
    stop: async () => {
      child.kill('SIGTERM');
      await child;
    },
  };
}

export async function launchBrowser(): Promise<Browser> {
  // Root in a container has no user namespace for Chromium's sandbox.
  return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}

/** Saves a full-page screenshot as `test-artifacts/ui/NAME.png`. */
export async function screenshot(page: Page, name: string, fullPage = true): Promise<void> {
  await mkdir(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage });
}

/** Signs `page` in through the form. */
export async function signIn(page: Page, url: string): Promise<void> {
  await page.goto(`${url}/`);
  await page.fill('#token', ADMIN_TOKEN);
  await Promise.all([page.waitForURL(`${url}/`), page.click('button[type=submit]')]);
  await page.waitForSelector('h1:has-text("Pipelines")');
}
