/**
 * A hostile coordinator's variable names (issue 34, item 3): a file-type variable named
 * `../../../../<a host file>`, its value that file's path, must not get the host file mounted into
 * the job's container, read, or handed (chowned) to the image's user. GitLab never sends such a name
 * (letters, digits and `_` only); the runner skips it with a warning.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { TestServer } from '../../helpers/server.js';
import { IMAGES, skipDocker } from './engine.js';
import { runDockerJob, useDockerTestServer } from './jobs.js';

let t: TestServer;
let token: string;
useDockerTestServer((server, runnerToken) => {
  t = server;
  token = runnerToken;
});

/** A root-only file outside every dir of the runner, with content of its own. */
async function hostFile(): Promise<{ path: string; content: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'ci-runner-host-file-'));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  const path = join(dir, 'secret');
  const content = `host secret ${randomBytes(8).toString('hex')}`;
  await writeFile(path, `${content}\n`, { mode: 0o600 });
  return { path, content };
}

describe.skipIf(skipDocker)('docker executor: variable names from a hostile coordinator', () => {
  it('never mounts, reads or chowns a host file named by a file variable\'s name', async () => {
    const target = await hostFile();
    const before = await stat(target.path);
    const name = `${'../'.repeat(24)}${target.path.slice(1)}`;
    // The image runs as 1000:1000, so a mounted file would also be handed to that user.
    const yaml = `j:\n  image: ${IMAGES.user}\n  script:\n    - 'cat ${target.path} 2>&1 || echo "not in the container"'\n    - 'echo "as file: $(cat "$HOST_FILE" 2>&1)"'\n`;
    const job = await runDockerJob(t, token, yaml, {
      variables: { [name]: target.path, HOST_FILE: 'own content' },
      variableFlags: { [name]: { file: true, masked: false }, HOST_FILE: { file: true, masked: false } },
    });
    expect(job.status, job.trace).toBe('success');
    expect(job.trace).not.toContain(target.content);
    expect(job.trace).toContain('not in the container');
    // A file variable with a proper name still works beside it.
    expect(job.trace).toContain('as file: own content');
    expect(job.trace).toContain('WARNING: file variables skipped, their names are not GitLab\'s (letters, digits and _ only): "../../');
    const after = await stat(target.path);
    expect({ uid: after.uid, gid: after.gid, mode: after.mode }).toEqual({ uid: before.uid, gid: before.gid, mode: before.mode });
    expect(await readFile(target.path, 'utf8')).toBe(`${target.content}\n`);
  }, 120_000);
});
