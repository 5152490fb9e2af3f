/**
 * One stage in the build container: a single exec whose standard input carries a tar of the files
 * the stage needs (the generated script, file variables, and before the first stage the whole
 * checkout), unpacked under /builds by `head -c <size> | tar -x` (see exec.ts for why the size), then
 * the script, run with bash when the image has it, else sh, its output streamed as it comes.
 *
 * Stopping: an exec'd process is the leader of its own process group, so a second exec sends SIGTERM
 * to the whole group (`kill -TERM -<pgid>`, the pgid read from a file the wrapper writes), then
 * SIGKILL after the grace period. The wrapper itself only waits through the signal and passes the
 * script's status on. Should the pod not answer at all, the connection is dropped and the pod is left
 * to the executor's cleanup, which deletes it.
 */
import { Writable } from 'node:stream';
import type { StageRequest, StageResult } from '../types.js';
import type { Connection } from './connection.js';
import { podExec, type ExecTarget } from './exec.js';
import { POD_BUILDS_DIR } from './pod-spec.js';

/**
 * `$1` bytes to unpack, `$2` the script (in them: it never runs from an incomplete input), `$3` the
 * file the group id goes to, first of all, so the stage can be stopped even while it unpacks.
 */
export const STAGE_WRAPPER = [
  'n=$1; script=$2; pidfile=$3',
  'echo $$ > "$pidfile"',
  `head -c "$n" | tar -x -f - -C ${POD_BUILDS_DIR} || { echo "ERROR: the job's files could not be unpacked in the build container (it needs head and tar)" >&2; exit 1; }`,
  'if command -v bash >/dev/null 2>&1; then s=bash; else s=sh; fi',
  // A handler, not an ignore: an ignored signal would be ignored by the script too.
  'trap : TERM INT',
  '"$s" "$script" </dev/null & p=$!',
  'while :; do wait "$p"; r=$?; kill -0 "$p" 2>/dev/null || break; done',
  'rm -f "$script" "$pidfile"',
  'exit "$r"',
].join('\n');

/** Signals the stage's process group; exits 0 when it was signalled. */
const KILL_GROUP = 'p=$(cat "$2" 2>/dev/null) && [ -n "$p" ] && kill -"$1" -"$p" 2>/dev/null';

export interface StageRun {
  connection: Connection;
  target: ExecTarget;
  /** The script's path in the pod. */
  script: string;
  /** Where the wrapper writes its process group id (somewhere any user may write). */
  pidFile: string;
  /** The tar to unpack first, holding the script. */
  input: { path: string; size: number };
  killGraceMs: number;
}

/** How long a stage may take to end after SIGKILL before the connection is dropped. */
const AFTER_KILL_MS = 5_000;

export async function runPodStage(run: StageRun, request: StageRequest): Promise<StageResult> {
  if (request.signal.aborted) return { exitCode: null, aborted: true };
  const output = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      request.output(chunk);
      callback();
    },
  });
  const dropped = new AbortController();
  const exec = podExec(run.connection, run.target, {
    command: ['sh', '-c', STAGE_WRAPPER, 'sh', String(run.input.size), run.script, run.pidFile],
    input: run.input,
    stdout: output,
    stderr: output,
    signal: dropped.signal,
  });
  let stopping: Promise<void> | undefined;
  const onAbort = (): void => {
    stopping = stop(run, exec, dropped);
  };
  request.signal.addEventListener('abort', onAbort, { once: true });
  try {
    const { exitCode } = await exec;
    const aborted = request.signal.aborted;
    // 128+n is how a shell reports a child killed by signal n.
    const signal = aborted && exitCode === 143 ? 'SIGTERM' : aborted && exitCode === 137 ? 'SIGKILL' : undefined;
    return { exitCode: signal ? null : exitCode, ...(signal ? { signal } : {}), aborted };
  } catch (error) {
    if (request.signal.aborted) return { exitCode: null, aborted: true };
    throw error;
  } finally {
    request.signal.removeEventListener('abort', onAbort);
    await stopping;
  }
}

/** SIGTERM to the group, SIGKILL after the grace period, then give up on the connection. */
async function stop(run: StageRun, exec: Promise<unknown>, dropped: AbortController): Promise<void> {
  const ended = exec.then(
    () => true,
    () => true,
  );
  const within = (ms: number): Promise<boolean> => Promise.race([ended, new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms).unref())]);
  const signal = async (name: 'TERM' | 'KILL'): Promise<boolean> => {
    const sink = new Writable({ write: (_chunk, _encoding, callback) => callback() });
    const result = await podExec(run.connection, run.target, { command: ['sh', '-c', KILL_GROUP, 'sh', name, run.pidFile], stdout: sink, stderr: sink, signal: AbortSignal.timeout(10_000) }).catch(() => undefined);
    return result?.exitCode === 0;
  };
  if (await signal('TERM')) {
    if (await within(run.killGraceMs)) return;
    await signal('KILL');
    if (await within(AFTER_KILL_MS)) return;
  } else if (await within(1_000)) return;
  dropped.abort(new Error('the stage did not stop'));
}
