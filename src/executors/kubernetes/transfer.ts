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
 *
 * A cluster can drop the last bytes of a long exec stream, its status frame with them, when the
 * command ends while much of its output is still on the way (seen with Kubernetes 1.20 and a 100 MB
 * copy-back on a loaded machine, every attempt). So the command does not end by itself: after the
 * archive it prints a trailer with tar's status (tar-end.ts) and waits on its standard input, and the
 * runner closes the connection once the trailer is in. A connection that drops before that is asked
 * again: tar only reads.
 */
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { readdir, rm, stat } from 'node:fs/promises';
import { isAbsolute, join } from 'node:path';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { create } from 'tar';
import { ExtractBudget } from '../../artifacts/budget.js';
import { extractArchive } from '../../artifacts/extract.js';
import { megabytes } from '../../artifacts/naming.js';
import { JobOverLimitError } from '../types.js';
import type { Connection } from './connection.js';
import { PodExecError, podExec, type ExecTarget } from './exec.js';
import { TarEndFinder, TarOverLimitError, TRAILER_END, TRAILER_START } from './tar-end.js';

/**
 * Writes a tar of `paths` (relative to `cwd`, each inside it) to `out`; returns its size. Symlinks
 * are stored as links. A path that leads out of `cwd` is refused: nothing of the runner's machine but
 * the slot dir goes into a pod.
 */
export async function packPaths(cwd: string, paths: readonly string[], out: string): Promise<number> {
  const outside = paths.find((path) => isAbsolute(path) || path === '..' || path.startsWith('../'));
  if (outside !== undefined) throw new Error(`${JSON.stringify(outside)} is not inside ${cwd}; it is not sent to the pod`);
  // portable: no owner or host-specific metadata; files belong to whoever unpacks them in the pod.
  await create({ cwd, file: out, portable: true, noDirRecurse: false }, [...paths]);
  return (await stat(out)).size;
}

/**
 * Every entry of the project dir in the pod but its top-level `.git`, as a tar on stdout (an empty
 * archive, two zero blocks, when there is none), then the trailer, then a wait for the connection to
 * close. tar's errors are caught in `err` while its archive goes to the original stdout (fd 3).
 */
const PACK_PROJECT = [
  'cd "$1" || exit 1',
  'set --',
  'for f in .[!.]* ..?* *; do { [ -e "$f" ] || [ -L "$f" ]; } && [ "$f" != .git ] && set -- "$@" "$f"; done',
  'if [ $# -gt 0 ]; then',
  '  { err=$(tar -c -f - -- "$@" 2>&1 >&3 3>&-); r=$?; } 3>&1',
  'else',
  '  head -c 1024 /dev/zero; r=0; err=',
  'fi',
  `printf '${TRAILER_START}%s\\n%s${TRAILER_END.replace(/\n/g, '\\n')}' "$r" "$err"`,
  'head -c 1 >/dev/null',
  'exit "$r"',
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
  /** The most bytes the archive may hold, and what sets it (for the message). */
  limit: CollectLimit;
}

export interface CollectLimit {
  bytes: number;
  /** What the user changes: `artifacts_extract_limit`, or why the default applies. */
  setting: string;
}

/**
 * The copy-back's budget when `artifacts_extract_limit` is not set: far more than a build leaves in
 * its project dir, short of what fills a runner's disk (the archive is written, then extracted).
 */
export const DEFAULT_COLLECT_LIMIT_BYTES = 10 * 1024 ** 3;

/** The build's files in the pod are more than the copy-back may bring back. */
export class CollectOverLimitError extends JobOverLimitError {}

/** How often the archive is asked for when the connection ends before the trailer: tar only reads, so asking again is safe. */
export const COLLECT_ATTEMPTS = 3;

/** Replaces the runner's project dir (its `.git` aside) with the pod's. */
export async function collectProject(request: CollectRequest): Promise<{ entries: number; bytes: number }> {
  const archive = join(request.scratchDir, `collect-${randomBytes(4).toString('hex')}.tar`);
  try {
    let entries = 0;
    for (let attempt = 1; ; attempt += 1) {
      try {
        entries = await packProject(request, archive);
        break;
      } catch (error) {
        if (!(error instanceof PodExecError && error.statusLost) || attempt === COLLECT_ATTEMPTS || request.signal.aborted) throw error;
        request.warn(`WARNING: ${error.message}; asking for the build's files again (${attempt + 1} of ${COLLECT_ATTEMPTS})`);
      }
    }
    await clearExceptGit(request.projectDir);
    if (entries === 0) return { entries: 0, bytes: 0 };
    const summary = await extractArchive(archive, request.projectDir, request.signal, { budget: new ExtractBudget(request.limit.bytes) });
    return { entries: summary.entries, bytes: summary.bytes };
  } finally {
    await rm(archive, { force: true });
  }
}

/**
 * `tar -c` of the pod's project dir into `archive` (written over); returns its number of entries.
 * Throws unless tar exited 0; a PodExecError with `statusLost` when the connection ended before the
 * trailer.
 */
async function packProject(request: CollectRequest, archive: string): Promise<number> {
  const finder = new TarEndFinder(request.limit.bytes);
  const written = pipeline(finder, createWriteStream(archive, { mode: 0o600 })).then(
    () => undefined,
    (error: unknown) => error,
  );
  const stderr = tail(4096);
  // The command waits once its trailer is out: the runner hangs up then, or as soon as the output
  // cannot be taken (not a tar stream, the disk full).
  const hangUp = new AbortController();
  finder.once('trailer', () => hangUp.abort());
  finder.once('error', (error) => hangUp.abort(error));
  let exitCode: number | undefined;
  let failure: unknown;
  try {
    const signal = AbortSignal.any([request.signal, hangUp.signal]);
    ({ exitCode } = await podExec(request.connection, request.target, { command: ['sh', '-c', PACK_PROJECT, 'sh', request.podProjectDir], stdout: finder, stderr: stderr.sink, holdStdin: true, signal }));
  } catch (error) {
    failure = error;
  }
  finder.end();
  const writeFailure = await written;
  if (writeFailure instanceof TarOverLimitError) {
    const { bytes, setting } = request.limit;
    throw new CollectOverLimitError('COLLECT_OVER_LIMIT', `the build's files in the pod come to more than ${megabytes(bytes)} (${setting}); the copy-back stopped there and nothing of it was kept. Leave less in the project directory, or raise artifacts_extract_limit in the runner's config.toml`, { cause: writeFailure });
  }
  const trailer = finder.trailer;
  if (failure !== undefined && (!trailer || request.signal.aborted)) throw failure;
  if (writeFailure !== undefined) throw writeFailure;
  // Without a trailer, only a command that failed before tar (the project dir is missing) has a status.
  const code = trailer?.exitCode ?? exitCode ?? -1;
  if (code !== 0 || !trailer) {
    const detail = [trailer?.errors ?? '', stderr.text()].join('\n').trim().split('\n').slice(-3).join('; ');
    throw new Error(code !== 0 ? `tar in the build container exited with status ${code}${detail ? `: ${detail}` : ''}` : 'the copy-back ended without saying how tar did');
  }
  return finder.entries;
}

/** A sink that keeps the last `limit` bytes written to it. */
function tail(limit: number): { sink: Writable; text: () => string } {
  let kept = Buffer.alloc(0);
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      kept = Buffer.concat([kept, chunk]).subarray(-limit);
      callback();
    },
  });
  return { sink, text: () => kept.toString('utf8') };
}

/** Removes everything in `dir` but `.git` (what the build deleted must not come back as an artifact). */
async function clearExceptGit(dir: string): Promise<void> {
  const entries = await readdir(dir).catch(() => [] as string[]);
  await Promise.all(entries.filter((name) => name !== '.git').map((name) => rm(join(dir, name), { recursive: true, force: true })));
}
