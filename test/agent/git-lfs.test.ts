/**
 * Git LFS in get_sources, as GitLab Runner 19 does it: the checkout runs with smudging off and
 * `git lfs pull` fetches the tracked files after it (from the project's own LFS endpoint, whatever the
 * repository's `.lfsconfig` names), unless GIT_LFS_SKIP_SMUDGE leaves the pointers. Against the
 * reference server's LFS endpoint and the real git-lfs (Debian's `git-lfs`; skipped without it).
 * A checkout with no file tracked by git-lfs (no `filter=lfs` attribute) runs no `git lfs` at all.
 * The jobs find git-lfs through a wrapper on PATH that writes down each call, then runs the real one.
 */
import { chmod, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { git } from '../helpers/git.js';
import { jobYaml, runV4Job } from '../helpers/v4-job.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const hasLfs = (await execa('git', ['lfs', 'version'], { reject: false })).exitCode === 0;
const CONTENT = 'large binary content\n'.repeat(100);

let t: TestServer;
let token: string;
let calls: string;

/** What the jobs ran of git-lfs so far (one line of arguments per call), then forgotten. */
async function lfsCalls(): Promise<string[]> {
  const text = await readFile(calls, 'utf8').catch(() => '');
  await writeFile(calls, '');
  return text.split('\n').filter(Boolean);
}

beforeAll(async () => {
  if (!hasLfs) return;
  const real = (await execa('sh', ['-c', 'command -v git-lfs'])).stdout.trim();
  const bin = await mkdtemp(join(tmpdir(), 'lfs-wrapper-'));
  calls = join(bin, 'calls');
  await writeFile(join(bin, 'git-lfs'), `#!/bin/sh\necho "$*" >> '${calls}'\nexec '${real}' "$@"\n`);
  await chmod(join(bin, 'git-lfs'), 0o755);
  process.env.PATH = `${bin}:${process.env.PATH ?? ''}`;
  t = await startTestServer({ files: { 'README.md': '# lfs\n' } });
  await git(t.projectPath, ['lfs', 'install', '--local']);
  await git(t.projectPath, ['lfs', 'track', '*.bin']);
  await writeFile(join(t.projectPath, 'data.bin'), CONTENT);
  // A repository may name another LFS store; the runner fetches from the project's own.
  await writeFile(join(t.projectPath, '.lfsconfig'), '[lfs]\n\turl = file:///nonexistent/store\n');
  await git(t.projectPath, ['add', '.gitattributes', 'data.bin', '.lfsconfig']);
  await git(t.projectPath, ['commit', '-q', '-m', 'lfs']);
  ({ token } = await t.registerRunner());
});
afterAll(async () => {
  await t?.close();
});

const runJob = (variables: Record<string, string>, script: string[]) => runV4Job(t, token, jobYaml(variables, script));

describe.skipIf(!hasLfs)('Git LFS', () => {
  it('pulls the tracked files after the checkout, from the project\'s own LFS endpoint', async () => {
    const run = await runJob({}, ['head -c 20 data.bin; echo', 'wc -c < data.bin']);
    expect(run.status, run.trace).toBe('success');
    expect(run.trace).toContain('large binary content');
    expect(run.trace).toContain(String(CONTENT.length));
    expect(await lfsCalls()).toContain('pull');
  });

  it('leaves the pointer files with GIT_LFS_SKIP_SMUDGE', async () => {
    const run = await runJob({ GIT_LFS_SKIP_SMUDGE: '1' }, ['head -n 1 data.bin']);
    expect(run.status, run.trace).toBe('success');
    expect(run.trace).toContain('version https://git-lfs.github.com/spec/v1');
  });

  it('runs no git-lfs when no file of the checkout is tracked by it', async () => {
    const plain = await startTestServer({ files: { 'README.md': '# no lfs here\n', 'data.bin': 'small\n' } });
    try {
      const { token: plainToken } = await plain.registerRunner();
      await lfsCalls();
      const run = await runV4Job(plain, plainToken, jobYaml({}, ['cat data.bin']));
      expect(run.status, run.trace).toBe('success');
      expect(run.trace).toContain('small');
      expect(await lfsCalls()).toEqual([]);
    } finally {
      await plain.close();
    }
  });
});
