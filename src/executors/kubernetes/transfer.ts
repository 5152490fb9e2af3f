/**
 * Files between the runner and the pod, which has no route to the coordinator: the checkout goes in
 * (get_sources, artifacts and cache are the runner's), the build's work comes back out for
 * archive_cache and upload_artifacts.
 *
 * In: a tar of paths under the slot dir, written to a file first so its exact size is known (the
 * stage unpacks `head -c <size>` of its input; see exec.ts). Out: `tar -c` of the project dir in the
 * pod, except `.git`, to a file in the job's state dir, then extracted over the project dir by the
 * artifacts extraction (two passes, refusing any entry or link that would land outside the project
 * or in its `.git`): the pod runs the job's code, so what comes back is treated as hostile. The
 * runner's own `.git` stays: git on the runner never sees anything a job wrote.
 */
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { create } from 'tar';
import { extractArchive } from '../../artifacts/extract.js';
import type { Connection } from './connection.js';
import { PodExecError, podExec, type ExecTarget } from './exec.js';

/** Writes a tar of `paths` (relative to `cwd`) to `out`; returns its size. Symlinks are stored as links. */
export async function packPaths(cwd: string, paths: readonly string[], out: string): Promise<number> {
  // portable: no owner or host-specific metadata; files belong to whoever unpacks them in the pod.
  await create({ cwd, file: out, portable: true, noDirRecurse: false }, [...paths]);
  return (await stat(out)).size;
}

/** Every entry of the project dir in the pod but its top-level `.git`, as a tar on stdout. */
const PACK_PROJECT = [
  'cd "$1" || exit 1',
  'set --',
  'for f in .[!.]* ..?* *; do { [ -e "$f" ] || [ -L "$f" ]; } && [ "$f" != .git ] && set -- "$@" "$f"; done',
  '[ $# -gt 0 ] || exit 0',
  'exec tar -c -f - -- "$@"',
].join('\n');

export interface CollectRequest {
  connection: Connection;
  target: ExecTarget;
  /** The project dir in the pod and on the runner. */
  podProjectDir: string;
  projectDir: string;
  /** Where the archive is kept while it is checked and extracted (the job's state dir). */
  scratchDir: string;
  signal: AbortSignal;
  /** A line for the trace (a connection that dropped and is tried again). */
  warn: (line: string) => void;
}

/**
 * How often the archive is asked for when the connection ends before tar's status (Kubernetes may drop
 * a long exec stream at its end): tar only reads, so asking again is safe.
 */
export const COLLECT_ATTEMPTS = 3;

/** Replaces the runner's project dir (its `.git` aside) with the pod's. */
export async function collectProject(request: CollectRequest): Promise<{ entries: number; bytes: number }> {
  const archive = join(request.scratchDir, `collect-${randomBytes(4).toString('hex')}.tar`);
  try {
    for (let attempt = 1; ; attempt += 1) {
      try {
        await packProject(request, archive);
        break;
      } catch (error) {
        if (!(error instanceof PodExecError && error.statusLost) || attempt === COLLECT_ATTEMPTS || request.signal.aborted) throw error;
        request.warn(`WARNING: ${error.message}; asking for the build's files again (${attempt + 1} of ${COLLECT_ATTEMPTS})`);
      }
    }
    await clearExceptGit(request.projectDir);
    // An empty project dir comes back as no output at all.
    if ((await stat(archive)).size === 0) return { entries: 0, bytes: 0 };
    const summary = await extractArchive(archive, request.projectDir, request.signal);
    return { entries: summary.entries, bytes: summary.bytes };
  } finally {
    await rm(archive, { force: true });
  }
}

/** `tar -c` of the pod's project dir into `archive` (written over); throws unless tar exited 0. */
async function packProject(request: CollectRequest, archive: string): Promise<void> {
  const file = createWriteStream(archive, { mode: 0o600 });
  const errors: Buffer[] = [];
  const stderr = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      if (errors.reduce((n, b) => n + b.length, 0) < 4096) errors.push(chunk);
      callback();
    },
  });
  let exitCode: number;
  try {
    ({ exitCode } = await podExec(request.connection, request.target, { command: ['sh', '-c', PACK_PROJECT, 'sh', request.podProjectDir], stdout: file, stderr, signal: request.signal }));
  } finally {
    file.end();
    await finished(file);
  }
  if (exitCode !== 0) {
    const detail = Buffer.concat(errors).toString('utf8').trim().split('\n').slice(-3).join('; ');
    throw new Error(`tar in the build container exited with status ${exitCode}${detail ? `: ${detail}` : ''}`);
  }
}

/** Removes everything in `dir` but `.git` (what the build deleted must not come back as an artifact). */
async function clearExceptGit(dir: string): Promise<void> {
  const entries = await readdir(dir).catch(() => [] as string[]);
  await Promise.all(entries.filter((name) => name !== '.git').map((name) => rm(join(dir, name), { recursive: true, force: true })));
}
