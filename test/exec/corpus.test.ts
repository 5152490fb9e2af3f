/**
 * `ci-runner exec` on every case of the exec corpus (see corpus.ts): pipelines from gitlab-ci-local's
 * own test suite, judged by what GitLab does. Cases run side by side (vitest's `maxConcurrency`),
 * each as its own exec process in its own repository. The corpus lives beside the checkout
 * (`../shared/exec-corpus`, or `EXEC_CORPUS`); in CI (`CI=true`) a missing corpus fails the run.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CASE_TIMEOUT_MS, corpusDir, corpusExists, corpusWorkDir, judge, loadCases, runCase, type CorpusCase } from './corpus.js';

const dir = corpusDir();
const present = await corpusExists(dir);
const cases: CorpusCase[] = present ? await loadCases(dir) : [];

// Missing outside CI: shown as skipped. Missing in CI: a failure, never a silent pass.
describe.runIf(!present)('the exec corpus', () => {
  it.skipIf(process.env.CI !== 'true')(`is at ${dir} (set EXEC_CORPUS to run it from elsewhere)`, () => {
    throw new Error(`the exec corpus is missing: no ${dir}/README.md; CI must run every case (check out ../shared beside the repository)`);
  });
});

describe.runIf(present).concurrent('exec on the corpus pipelines', () => {
  let work: Awaited<ReturnType<typeof corpusWorkDir>>;
  beforeAll(async () => {
    work = await corpusWorkDir();
  });
  afterAll(async () => {
    await work.remove();
  });

  it('has every case the corpus README promises', () => {
    expect(cases.length).toBeGreaterThanOrEqual(91);
  });

  it.each(cases.map((testCase) => [testCase.name, testCase] as const))('%s', async (_name, testCase) => {
    const run = await runCase(testCase, work.root, work.state);
    const problems = judge(testCase, run);
    expect(problems, `${problems.join('\n')}\n--- exec printed:\n${run.output.slice(-4000)}`).toEqual([]);
  }, CASE_TIMEOUT_MS + 15_000);
});
