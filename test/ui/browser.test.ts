/**
 * The web page in a real browser (Debian's Chromium through playwright-core) against a real
 * `ci-runner serve` and a real `ci-runner run` with the shell executor. One server and one runner
 * for the file; the tests run in order and each starts its own pipeline from the project's
 * `.gitlab-ci.yml` on a branch made for it. Screenshots land in test-artifacts/ui/.
 */
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunnerApiClient } from '../../src/client/runner-api.js';
import { allGone, pidsIn, waitUntil } from '../cli/helpers.js';
import { createGitRepo, git } from '../helpers/git.js';
import { ADMIN_TOKEN, chromiumMissing, launchBrowser, screenshot, signIn, startRunner, startServe, type Daemon, type Served } from './harness.js';

const MAIN_PIPELINE = `stages: [build, deploy]
build:
  stage: build
  script:
    - echo built > out.txt
    - printf 'section_start:%s:prep[collapsed=true]\\r\\033[0KPreparing things\\n' $(date +%s)
    - echo 'inside the section, token [MASKED] and <img src=x onerror=alert(1)>'
    - printf 'section_end:%s:prep\\r\\033[0K\\n' $(date +%s)
    - printf 'progress 10%%\\r'; sleep 1; printf 'progress 100%%\\n'
    - for i in 1 2 3 4 5 6; do printf '\\033[32mline %s\\033[0m\\n' $i; sleep 1; done
  artifacts:
    paths: [out.txt]
    expire_in: 1 week
deploy:
  stage: deploy
  when: manual
  script:
    - echo deployed by hand
`;

const FAILING_PIPELINE = `broken:
  script:
    - echo about to fail
    - exit 3
`;

/** Taken by a runner that the test itself plays (tag `by-test`), so it can send a log of any size. */
const BIG_PIPELINE = `big:
  tags: [by-test]
  script:
    - echo sent by the test
`;

function longPipeline(pidFile: string): string {
  return `sleeper:
  script:
    - echo $$ >> ${pidFile}
    - sleep 300 & echo $! >> ${pidFile}; echo started sleeping; wait
`;
}

let served: Served;
let runner: Daemon;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let pidFile: string;

async function branch(repo: string, name: string, pipeline: string): Promise<void> {
  await git(repo, ['checkout', '-q', '-b', name, 'main']);
  await writeFile(join(repo, '.gitlab-ci.yml'), pipeline);
  await git(repo, ['commit', '-q', '-am', `pipeline for ${name}`]);
  await git(repo, ['checkout', '-q', 'main']);
}

/** Runs the project's pipeline at `ref` through the page's form; returns the pipeline id. */
async function runPipeline(ref: string): Promise<number> {
  await page.click('nav a[data-nav="new"]');
  await page.waitForSelector('form.form');
  await page.fill('#ref', ref);
  await page.click('form.form button[type=submit]');
  await page.waitForURL(/\/pipelines\/\d+$/);
  await page.waitForSelector('.stages');
  return Number(/\/pipelines\/(\d+)$/.exec(page.url())?.[1]);
}

async function jobIdOnPipeline(name: string): Promise<number> {
  const card = page.locator('.job-card', { has: page.locator(`a.job-name:text-is("${name}")`) });
  return Number(await card.getAttribute('data-job'));
}

beforeAll(async () => {
  const missing = chromiumMissing();
  if (missing) throw new Error(missing);
  pidFile = join(await mkdtemp(join(tmpdir(), 'ci-runner-ui-')), 'pids');
  const repo = await createGitRepo({ '.gitlab-ci.yml': MAIN_PIPELINE, 'README.md': '# app\n' });
  await branch(repo, 'failing', FAILING_PIPELINE);
  await branch(repo, 'long', longPipeline(pidFile));
  await branch(repo, 'big', BIG_PIPELINE);
  served = await startServe(repo);
  runner = await startRunner(served.url, 'browser-test-runner');
  browser = await launchBrowser();
  context = await browser.newContext({ viewport: { width: 1280, height: 800 }, acceptDownloads: true });
  page = await context.newPage();
});

afterAll(async () => {
  await browser?.close();
  await runner?.stop();
  await served?.stop();
});

describe('the web page in a browser', () => {
  it('shows nothing but a sign-in form without the admin token, and keeps the token in an HttpOnly SameSite=Strict cookie', async () => {
    await page.goto(`${served.url}/runners`);
    expect(await page.locator('form[action="/-/ui/sign-in"]').count()).toBe(1);
    expect(await page.locator('#app, nav, table').count()).toBe(0);
    const api = await page.evaluate(async () => (await fetch('/-/ui/api/pipelines')).status);
    expect(api).toBe(401);
    await page.fill('#token', 'not-the-token');
    await page.click('button[type=submit]');
    await page.waitForSelector('.error');
    expect(await page.textContent('.error')).toContain('not this server');
    await screenshot(page, 'sign-in');

    await signIn(page, served.url);
    const [cookie] = await context.cookies();
    expect(cookie).toMatchObject({ name: 'ci_runner_admin', httpOnly: true, sameSite: 'Strict' });
    expect(await page.evaluate('document.cookie')).toBe('');
    expect(await page.content()).not.toContain(ADMIN_TOKEN);
  });

  it("shows a running job's log growing line by line, in colour, without reloading", async () => {
    await runPipeline('main');
    const jobId = await jobIdOnPipeline('build');
    await page.click(`a[href="/jobs/${jobId}"]`);
    await page.waitForSelector('.log');
    await page.evaluate('window.marker = 42');
    const seen = new Set<number>();
    await waitUntil(
      async () => {
        const lines = await page.locator('.log .line', { hasText: /^line \d$/ }).count();
        seen.add(lines);
        return lines === 6;
      },
      60_000,
      'all six lines shown',
    );
    // Lines arrived a few at a time, not all at once at the end.
    expect(seen.size).toBeGreaterThanOrEqual(3);
    expect(await page.evaluate('window.marker')).toBe(42);
    expect(await page.locator('.log .ansi-green-fg', { hasText: 'line 1' }).count()).toBe(1);
    // GitLab's section markers become a collapsed section; text is text, [MASKED] stays as it is.
    const section = page.locator('.log details.section[data-section="prep"]');
    expect(await section.locator('summary').textContent()).toContain('Preparing things');
    expect(await section.getAttribute('open')).toBeNull();
    expect(await section.locator('.section-body').textContent()).toContain('token [MASKED] and <img src=x onerror=alert(1)>');
    expect(await page.locator('.log img').count()).toBe(0);
    await page.waitForSelector('#job-title [data-status="success"]', { timeout: 60_000 });
    // The runner's stages are sections (GitLab Runner 19's names and headings), the job's own inside its stage's.
    const script = page.locator('.log details.section[data-section="step_script"]');
    expect(await script.locator('> summary').textContent()).toContain('Executing "step_script" stage of the job script');
    expect(await script.locator('details.section[data-section="prep"]').count()).toBe(1);
    for (const stage of ['prepare_executor', 'prepare_script', 'get_sources', 'upload_artifacts_on_success', 'cleanup_file_variables']) {
      expect(await page.locator(`.log details.section[data-section="${stage}"]`).count(), stage).toBe(1);
    }
    // Each line's stamp is a time beside it, not text of the line; a `+` piece after a carriage return overwrites its line.
    expect(await page.locator('.log.stamped').count()).toBe(1);
    expect(await page.locator('.log .line', { hasText: /^line 1$/ }).getAttribute('data-time')).toMatch(/^\d\d:\d\d:\d\d$/);
    expect(await page.locator('.log .line', { hasText: /^progress 100%$/ }).count()).toBe(1);
    expect(await page.locator('.log .line', { hasText: /^progress 10%$/ }).count()).toBe(0);
    expect(await page.locator('.log .line', { hasText: /\d{4}-\d\d-\d\dT/ }).count()).toBe(0);
    await screenshot(page, 'job');
  });

  it('downloads the artifacts of a job from its page', async () => {
    const link = page.locator('[data-artifacts]');
    await link.waitFor({ timeout: 30_000 });
    const [download] = await Promise.all([page.waitForEvent('download'), link.click()]);
    const bytes = await readFile(await download.path());
    const jobId = /\/jobs\/(\d+)$/.exec(page.url())?.[1];
    const stored = await fetch(`${served.url}/admin/api/jobs/${jobId}/artifacts`, { headers: { 'private-token': ADMIN_TOKEN } });
    expect(bytes.byteLength).toBeGreaterThan(0);
    expect(bytes.equals(Buffer.from(await stored.arrayBuffer()))).toBe(true);
    expect(download.suggestedFilename()).toMatch(/^artifacts/);
  });

  it('plays a manual job and the runner runs it', async () => {
    await page.click('.crumbs a[href^="/pipelines/"]');
    await page.waitForSelector('.stages');
    const deploy = await jobIdOnPipeline('deploy');
    const card = page.locator(`.job-card[data-job="${deploy}"]`);
    await expect.poll(() => card.getAttribute('data-status'), { timeout: 30_000 }).toBe('manual');
    await card.locator('[data-action="play"]').click();
    await expect.poll(() => card.getAttribute('data-status'), { timeout: 60_000 }).toBe('success');
    await page.waitForSelector('h1 [data-status="success"]');
    await screenshot(page, 'pipeline');
  });

  it('turns a failing job red', async () => {
    await runPipeline('failing');
    const card = page.locator('.job-card').first();
    await expect.poll(() => card.getAttribute('data-status'), { timeout: 60_000 }).toBe('failed');
    const colour = await card.evaluate((element) => (globalThis as unknown as { getComputedStyle(e: unknown): { borderLeftColor: string } }).getComputedStyle(element).borderLeftColor);
    expect(colour).toBe('rgb(207, 34, 46)');
    await page.waitForSelector('h1 [data-status="failed"]');
    await page.click('nav a[data-nav="pipelines"]');
    await page.waitForSelector('tr[data-pipeline] [data-status="failed"]');
    await screenshot(page, 'pipelines');
  });

  it('cancels a running job from its page and the runner stops its processes', async () => {
    await runPipeline('long');
    const jobId = await jobIdOnPipeline('sleeper');
    await page.click(`a[href="/jobs/${jobId}"]`);
    await page.waitForSelector('.log .line:has-text("started sleeping")', { timeout: 60_000 });
    const pids = await pidsIn(pidFile);
    expect(pids.length).toBe(2);
    expect(await allGone(pids)).toBe(false);
    await page.click('[data-action="cancel"]');
    await page.waitForSelector('#job-title [data-status="canceled"]', { timeout: 30_000 });
    await waitUntil(() => allGone(pids), 60_000, "the job's processes stopped by the runner");
    expect(await page.locator('[data-action="retry"]').count()).toBe(1);
  });

  it('opens a 24 MiB log at its end, keeps the page bounded, and offers the whole log as a download', async () => {
    await runPipeline('big');
    const jobId = await jobIdOnPipeline('big');
    const client = new RunnerApiClient({ url: served.url });
    const registered = await client.registerRunner({ token: 'ui-test-registration', description: 'by-test', tagList: ['by-test'], runUntagged: false });
    const token = registered.runner!.token;
    const taken = await client.requestBuild(token, undefined);
    if (taken.kind !== 'build') throw new Error(`no build for the test's runner: ${taken.kind}`);
    expect(taken.build.id).toBe(jobId);
    const line = (n: number): string => `\u001b[36m${String(n).padStart(9, '0')}\u001b[0m ${'x'.repeat(80)}\n`;
    const perChunk = Math.floor((4 * 1024 * 1024) / line(1).length);
    let offset = 0;
    let n = 0;
    for (let chunk = 0; chunk < 6; chunk += 1) {
      const text = Buffer.from(Array.from({ length: perChunk }, () => line(++n)).join(''));
      const sent = await client.patchTrace(jobId, taken.build.token, offset, text);
      expect(sent.status).toBe(202);
      offset += text.byteLength;
    }
    await page.goto(`${served.url}/jobs/${jobId}`);
    await page.waitForSelector('.log-note:has-text("Showing the end of a 24")');
    await page.waitForSelector(`.log .line:has-text("${String(n).padStart(9, '0')}")`);
    const shown = Number(await page.evaluate('document.querySelectorAll(".log .line").length'));
    expect(shown).toBeLessThan(20_000);
    expect(await page.locator(`.log .line:has-text("${String(1).padStart(9, '0')} ")`).count()).toBe(0);
    // Still live: a new line shows up at the end.
    await client.patchTrace(jobId, taken.build.token, offset, Buffer.from('the very last line\n'));
    await page.waitForSelector('.log .line:has-text("the very last line")');
    const whole = await page.request.get(`${served.url}/-/ui/api/jobs/${jobId}/trace`);
    expect(Number(whole.headers()['content-length'])).toBe(offset + 'the very last line\n'.length);
    await client.updateBuild(jobId, token, { state: 'success' });
    await page.waitForSelector('#job-title [data-status="success"]');
    await screenshot(page, 'job-long-log', false); // the whole page is thousands of lines tall
    await client.close();
  });

  it('pauses and resumes a runner', async () => {
    await page.click('nav a[data-nav="runners"]');
    const row = page.locator('tr[data-runner]').first();
    await row.locator('[data-action="pause"]').click();
    await row.locator('.badge:has-text("paused")').waitFor();
    await screenshot(page, 'runners');
    await row.locator('[data-action="resume"]').click();
    await row.locator('.badge:has-text("online")').waitFor();
  });

  it('creates a runner with "New runner", shows its glrt- token once, and deletes it', async () => {
    await page.click('nav a[data-nav="runners"]');
    await page.click('[data-action="new-runner"]');
    await page.fill('#runner-description', 'made in the browser');
    await page.fill('#runner-tags', 'gpu');
    await page.click('form[aria-label="New runner"] button[type="submit"]');
    const token = (await page.locator('code[data-token]').textContent()) ?? '';
    expect(token).toMatch(/^glrt-[A-Za-z0-9]{20}$/);
    await expect.poll(() => page.locator('pre.command').allTextContents()).toEqual([
      `ci-runner register --url ${served.url} --token ${token}`,
      `gitlab-runner register --url ${served.url} --token ${token}`,
    ]);
    const row = page.locator('tr[data-runner]:has-text("made in the browser")');
    await row.waitFor();
    await screenshot(page, 'runner-created');
    const verify = (value: string) => fetch(`${served.url}/api/v4/runners/verify`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: value }) });
    expect((await verify(token)).status).toBe(200);
    // Shown once: neither "Done" nor a reload brings it back.
    await page.click('[data-action="done"]');
    expect(await page.locator('code[data-token]').count()).toBe(0);
    await page.reload();
    await row.waitFor();
    expect(await page.content()).not.toContain(token);
    page.once('dialog', (dialog) => void dialog.accept());
    await row.locator('[data-action="delete"]').click();
    await row.waitFor({ state: 'detached' });
    expect((await verify(token)).status).toBe(403);
  });

  it('fits a phone-sized screen', async () => {
    const phone = await context.newPage();
    await phone.setViewportSize({ width: 390, height: 844 });
    const pages: Array<[string, string, string]> = [
      ['/', 'tr[data-pipeline]', 'phone-pipelines'],
      ['/pipelines/1', '.stages', 'phone-pipeline'],
      ['/jobs/1', '.log .line', 'phone-job'],
      ['/runners', 'tr[data-runner]', 'phone-runners'],
    ];
    for (const [path, ready, name] of pages) {
      await phone.goto(`${served.url}${path}`);
      await phone.waitForSelector(ready);
      const width = await phone.evaluate('document.documentElement.scrollWidth');
      expect(width, path).toBeLessThanOrEqual(390);
      await screenshot(phone, name);
    }
    await phone.close();
  });
});
