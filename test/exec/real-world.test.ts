/**
 * `exec` on real projects' pipelines (test/exec/fixtures/real-world: each file says where it comes from
 * and what was adapted; every command is an echo of itself). Each must be accepted as GitLab accepts
 * it, with the jobs a push to the default branch gets (pinned in the snapshot beside this file), and
 * what it uses that a local run does not apply listed. One runs whole.
 */
import { cp, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import { DAEMON_NODE_FLAGS } from '../../src/util/node-flags.js';

const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
const FIXTURES = fileURLToPath(new URL('./fixtures/real-world', import.meta.url));
const names = (await readdir(FIXTURES)).sort();
const root = await mkdtemp(join(tmpdir(), 'ci-runner-real-world-'));
const GIT_ENV = { GIT_AUTHOR_NAME: 'r', GIT_AUTHOR_EMAIL: 'r@example.invalid', GIT_COMMITTER_NAME: 'r', GIT_COMMITTER_EMAIL: 'r@example.invalid' };

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** The fixture as a repository with one commit on `main`, its default branch, and an origin on gitlab.com. */
async function repoOf(name: string, dir = name): Promise<string> {
  const repo = join(root, dir);
  await cp(join(FIXTURES, name), repo, { recursive: true });
  const git = (args: string[]) => execa('git', ['-c', 'commit.gpgsign=false', ...args], { cwd: repo, env: GIT_ENV, stdin: 'ignore' });
  await git(['init', '-q', '-b', 'main']);
  await git(['remote', 'add', 'origin', `git@gitlab.com:example/${name}.git`]);
  await git(['add', '-A']);
  await git(['commit', '-q', '-m', name]);
  return repo;
}

function exec(repo: string, args: string[]) {
  return execa('node', [...DAEMON_NODE_FLAGS, CLI, 'exec', '--color=false', ...args], {
    cwd: repo,
    env: { XDG_STATE_HOME: join(root, 'state'), CI: '' },
    reject: false,
    all: true,
    stdin: 'ignore',
    timeout: 120_000,
  });
}

describe.concurrent('exec on real-world pipelines', () => {
  it('has a dozen of them', () => {
    expect(names.length).toBeGreaterThanOrEqual(12);
  });

  it.for<string>(names)('%s: accepted, with the jobs GitLab creates for a push to main', { timeout: 150_000 }, async (name, { expect }) => {
    const result = await exec(await repoOf(name), ['--list']);
    expect(result.exitCode, result.all).toBe(0);
    const lines = (result.all ?? '').split('\n');
    const head = lines.findIndex((line) => /^JOB\s+STAGE\s+WHEN\s+NEEDS$/.test(line));
    expect(head, result.all).toBeGreaterThanOrEqual(0);
    const jobs = lines.slice(head + 1).filter((line) => line.trim() !== '').map((line) => line.replace(/\s{2,}/g, ' | ').trim());
    const notes = lines.filter((line) => line.startsWith('not applied locally: ')).map((line) => line.replace(/ \(.*?\): /, ': '));
    expect({ jobs, notes }).toMatchSnapshot();
  });

  it('libsoup runs whole: every job passes as its echoes do', async () => {
    const result = await exec(await repoOf('libsoup', 'libsoup-run'), ['--concurrent', '2']);
    expect(result.exitCode, result.all).toBe(0);
    expect(result.all).toMatch(/Pipeline #1 passed/);
  }, 150_000);
});
