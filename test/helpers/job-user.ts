/**
 * The unprivileged user `user` / `run --user` tests run jobs as: a system user made on first use,
 * with a supplementary group (as `docker` would be). Needs root; `isRoot` says whether tests can.
 */
import { execa } from 'execa';
import { lookupUser, type RunAs } from '../../src/executors/run-as.js';

export const isRoot = process.getuid?.() === 0;
export const TEST_USER = 'ci-runner-test-job';
export const TEST_GROUP = 'ci-runner-test-extra';

/** Creates the test user and group when missing; returns the user as the daemon looks it up. */
export async function ensureTestUser(): Promise<RunAs> {
  const exists = await execa('id', ['-u', TEST_USER], { reject: false });
  if (exists.exitCode !== 0) await execa('useradd', ['--system', '--no-create-home', '--home-dir', `/nonexistent-${TEST_USER}`, '--shell', '/usr/sbin/nologin', TEST_USER], { reject: false });
  if ((await execa('getent', ['group', TEST_GROUP], { reject: false })).exitCode !== 0) await execa('groupadd', ['--system', TEST_GROUP], { reject: false });
  await execa('usermod', ['-a', '-G', TEST_GROUP, TEST_USER]);
  return lookupUser(TEST_USER);
}

/** The extra group's gid. */
export async function testGroupId(): Promise<number> {
  return Number((await execa('getent', ['group', TEST_GROUP])).stdout.split(':')[2]);
}
