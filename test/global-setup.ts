/**
 * The test run's temp dirs: every test makes its own with `mkdtemp(tmpdir())`, and many leave them
 * (a checkout, a job's 100 MB output), so a developer's /tmp grew by ~280 dirs and ~320 MB a run. The
 * run points TMPDIR at one dir of its own, which the test workers (started after this) inherit, and
 * removes it at the end. `CI_RUNNER_TEST_KEEP_TMP=1` keeps it (its path is printed) to look at after a
 * failure. Mode 0755, as /tmp is searchable: a job user (setpriv) must reach the dirs its test gives it.
 */
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export async function setup(): Promise<() => Promise<void>> {
  const dir = await mkdtemp(join(tmpdir(), 'ci-runner-tests-'));
  await chmod(dir, 0o755);
  process.env.TMPDIR = dir;
  return async () => {
    if (process.env.CI_RUNNER_TEST_KEEP_TMP === '1') {
      process.stdout.write(`the test run's temp dirs are kept in ${dir}\n`);
      return;
    }
    // A leftover mount (a test that could not unmount its tmpfs) must not fail a finished run.
    await rm(dir, { recursive: true, force: true, maxRetries: 2 }).catch((error: unknown) => process.stderr.write(`could not remove the test run's temp dir ${dir}: ${(error as Error).message}\n`));
  };
}
