/**
 * The get_sources commands in a kept checkout already at the job's commit, run by bash against real
 * repositories: the fetch is skipped when HEAD and every ref the job fetches name the commit, read
 * from their loose files without a git process, or by one `git rev-parse` when a ref is packed or a
 * tag; a ref that moved on means a fetch. A `git` on PATH in front of the real one logs each call.
 */
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gitSourcesCommands } from '../../src/agent/job/git-sources.js';
import type { BuildPayload } from '../../src/protocol/types.js';
import { createGitRepo, git } from '../helpers/git.js';

let origin: string;
let root: string;
let shimLog: string;
let path: string;

beforeAll(async () => {
  origin = await createGitRepo({ 'README.md': '# kept\n' });
  root = await mkdtemp(join(tmpdir(), 'ci-runner-at-sha-'));
  shimLog = join(root, 'git-calls');
  const shimDir = join(root, 'bin');
  await mkdir(shimDir);
  const realGit = (await execa('sh', ['-c', 'command -v git'])).stdout.trim();
  await writeFile(join(shimDir, 'git'), `#!/bin/sh\necho "$*" >> ${JSON.stringify(shimLog)}\nexec ${JSON.stringify(realGit)} "$@"\n`);
  await chmod(join(shimDir, 'git'), 0o755);
  path = `${shimDir}:${process.env.PATH ?? ''}`;
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
  await rm(origin, { recursive: true, force: true });
});

function job(sha: string, refspecs: string[], ref = 'main', tag = false): BuildPayload {
  return {
    id: 1, ref, tag, sha, status: 'running', name: 'j', token: 't', stage: 'test', project_id: 1, project_name: 'p', commands: 'true',
    repo_url: origin, before_sha: '0'.repeat(40), allow_git_fetch: true, options: {}, timeout: 0, variables: [], depends_on_builds: [], credentials: [],
    refspecs,
  };
}

/** Runs the fetch strategy's get_sources for `build` into `slot`/p; its output and the git calls it made. */
async function getSources(slot: string, build: BuildPayload): Promise<{ output: string; calls: string[] }> {
  await rm(shimLog, { force: true });
  const lines = gitSourcesCommands({ build, projectDir: join(slot, 'p'), strategy: 'fetch', depth: 20, submodules: 'none', lfs: false });
  const result = await execa('bash', ['-c', ['set -eo pipefail', 'exec 2>&1', ...lines].join('\n')], { cwd: slot, env: { PATH: path }, extendEnv: false, reject: false });
  expect(result.exitCode, result.stdout).toBe(0);
  const calls = (await readFile(shimLog, 'utf8').catch(() => '')).split('\n').filter(Boolean).map(verb);
  return { output: result.stdout, calls };
}

/** The git command of a logged call: its first word that is not an option (`-c key=value` skipped). */
function verb(line: string): string {
  const words = line.split(' ');
  for (let i = 0; i < words.length; i += 1) {
    if (words[i] === '-c') i += 1;
    else if (!words[i]!.startsWith('-')) return words[i]!;
  }
  return '';
}

const SKIPPED = 'is here already under the refs this job fetches: skipping the fetch';

describe('get_sources in a kept checkout at the job\'s commit', () => {
  it('reads HEAD and loose refs without git, falls back to one rev-parse for packed refs, and fetches once a ref moved on', async () => {
    const slot = await mkdtemp(join(root, 'slot-'));
    const sha = await git(origin, ['rev-parse', 'HEAD']);
    await git(origin, ['update-ref', 'refs/pipelines/7', sha]);
    const refspecs = ['+refs/pipelines/7:refs/pipelines/7', '+refs/heads/main:refs/remotes/origin/main'];

    const first = await getSources(slot, job(sha, refspecs));
    expect(first.calls).toEqual(['init', 'remote', 'fetch', 'checkout', 'clean']);

    const second = await getSources(slot, job(sha, refspecs));
    expect(second.output).toContain(SKIPPED);
    expect(second.calls).toEqual(['reset', 'clean']);

    await git(join(slot, 'p'), ['pack-refs', '--all']);
    const packed = await getSources(slot, job(sha, refspecs));
    expect(packed.output).toContain(SKIPPED);
    expect(packed.calls).toEqual(['rev-parse', 'reset', 'clean']);

    // The branch moved on at the origin: its loose ref no longer names the job's commit.
    await git(origin, ['commit', '-q', '--allow-empty', '-m', 'newer']);
    const newer = await git(origin, ['rev-parse', 'HEAD']);
    await git(join(slot, 'p'), ['fetch', '-q', origin, '+refs/heads/main:refs/remotes/origin/main']);
    const moved = await getSources(slot, job(sha, refspecs));
    expect(moved.output).not.toContain(SKIPPED);
    expect(moved.calls).toEqual(['rev-parse', 'fetch', 'checkout', 'clean']);
    expect(await git(join(slot, 'p'), ['rev-parse', 'refs/remotes/origin/main'])).toBe(newer);
    expect(await git(join(slot, 'p'), ['rev-parse', 'HEAD'])).toBe(sha);
  });

  it('peels an annotated tag with rev-parse (its loose ref names the tag object, not the commit)', async () => {
    const slot = await mkdtemp(join(root, 'slot-'));
    const sha = await git(origin, ['rev-parse', 'HEAD']);
    await git(origin, ['tag', '-a', '-m', 'a release', 'v1.0']);
    const refspecs = ['+refs/tags/v1.0:refs/tags/v1.0'];
    await getSources(slot, job(sha, refspecs, 'v1.0', true));
    expect(await readFile(join(slot, 'p', '.git', 'refs', 'tags', 'v1.0'), 'utf8')).not.toContain(sha);
    const again = await getSources(slot, job(sha, refspecs, 'v1.0', true));
    expect(again.output).toContain(SKIPPED);
    expect(again.calls).toEqual(['rev-parse', 'reset', 'clean']);
  });

  it('never reads a ref name that is not a plain path under refs/ as a file', () => {
    const sha = 'a'.repeat(40);
    const text = gitSourcesCommands({ build: job(sha, ['+refs/heads/main:refs/../../HEAD']), projectDir: '/b/p', strategy: 'fetch', depth: 20, submodules: 'none' }).join('\n');
    expect(text).toContain("git rev-parse -q 'refs/../../HEAD^{commit}'");
    expect(text).not.toContain('.git/refs/../');
  });
});
