/**
 * The web page in a real browser on what a pipeline's newer keywords show: the pipeline's name
 * (`workflow: name`) and what is not applied locally, a job waiting for its resource group
 * (`waiting_for_resource`), and a job's JUnit test counts, failed tests, coverage and reports.
 * A real `ci-runner serve` and `ci-runner run` (shell executor), as test/ui/browser.test.ts.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGitRepo } from '../helpers/git.js';
import { chromiumMissing, launchBrowser, screenshot, signIn, startRunner, startServe, type Daemon, type Served } from './harness.js';

const JUNIT = `<testsuites><testsuite name="math">
<testcase classname="math" name="adds"/><testcase classname="math" name="subtracts"/><testcase classname="math" name="multiplies"/>
<testcase classname="math" name="divides"><failure message="off by one"/></testcase>
<testcase classname="math" name="roots"><skipped/></testcase>
</testsuite></testsuites>
`;

function pipeline(release: string): string {
  return `workflow:
  name: 'Release $CI_COMMIT_REF_NAME'
.deploy:
  resource_group: production
  secrets:
    TOKEN:
      vault: deploy/token@ops
deploy-a:
  extends: .deploy
  script:
    - for i in $(seq 1 1200); do test -e ${release} && break; sleep 0.1; done
deploy-b:
  extends: .deploy
  script:
    - echo deployed
tests:
  coverage: '/Coverage: \\d+\\.\\d+%/'
  script:
    - 'echo "Coverage: 81.5%"'
    - echo '{}' > quality.json
  artifacts:
    reports:
      junit: junit.xml
      codequality: quality.json
`;
}

let served: Served;
let runner: Daemon;
let browser: Browser;
let page: Page;
let scratch: string;

beforeAll(async () => {
  const missing = chromiumMissing();
  if (missing) throw new Error(missing);
  scratch = await mkdtemp(join(tmpdir(), 'ci-runner-ui-reports-'));
  const repo = await createGitRepo({ '.gitlab-ci.yml': pipeline(join(scratch, 'release')), 'junit.xml': JUNIT });
  served = await startServe(repo);
  runner = await startRunner(served.url, 'reports-test-runner');
  browser = await launchBrowser();
  page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  await signIn(page, served.url);
});

afterAll(async () => {
  await browser?.close();
  await runner?.stop();
  await served?.stop();
  await rm(scratch, { recursive: true, force: true });
});

describe('the web page on reports and resource groups', () => {
  it('names the pipeline, lists what is not applied, and shows a job waiting for its resource group', async () => {
    await page.click('nav a[data-nav="new"]');
    await page.waitForSelector('form.form');
    await page.fill('#ref', 'main');
    await page.click('form.form button[type=submit]');
    await page.waitForURL(/\/pipelines\/\d+$/);
    await page.waitForSelector('.stages');
    expect(await page.textContent('h1 .pipeline-name')).toContain('Release main');
    expect(await page.textContent('.not-applied')).toContain('secrets (job deploy-a, job deploy-b)');
    const waiting = page.locator('.job-card', { has: page.locator('a.job-name:text-is("deploy-b")') });
    await expect.poll(() => waiting.getAttribute('data-status'), { timeout: 60_000 }).toBe('waiting_for_resource');
    await screenshot(page, 'pipeline-waiting-for-resource');
    await waiting.locator('a.job-name').click();
    const badge = page.locator('#job-title [data-status="waiting_for_resource"]');
    await badge.waitFor();
    expect(await badge.textContent()).toContain('waiting for resource');
    expect(await page.textContent('.side')).toContain('production');
    await writeFile(join(scratch, 'release'), '');
    await page.waitForSelector('#job-title [data-status="success"]', { timeout: 60_000 });
  });

  it("shows a job's tests, failed tests, coverage and reports", async () => {
    await page.click('.crumbs a[href^="/pipelines/"]');
    await page.waitForSelector('.stages');
    await page.locator('a.job-name:text-is("tests")').click();
    const tests = page.locator('[data-tests]');
    await tests.waitFor({ timeout: 60_000 });
    expect(await tests.textContent()).toContain('3 passed, 1 failed, 1 skipped');
    expect(await page.locator('.failed-tests li').allTextContents()).toEqual(['math.divides']);
    expect(await page.textContent('.side')).toContain('81.5%');
    await expect.poll(() => page.locator('ul.reports li code').allTextContents(), { timeout: 30_000 }).toEqual(expect.arrayContaining(['junit', 'codequality']));
    await screenshot(page, 'job-tests');
  });
});
