/**
 * One build stage in its own container: `docker run --rm` of the job's image with the project dir and
 * the job's state dir mounted, the generated script (mode 0600, in the state dir) as the only carrier
 * of the job's variables. A small sh wrapper runs it with bash when the image has it, else sh, passes
 * SIGTERM on to it (a PID 1 without a handler would ignore it), and hands written files back to the
 * runner's uid when the runner is not root. The image's ENTRYPOINT runs first, with the wrapper as its
 * command (entrypoint.ts).
 */
import type { StageRequest, StageResult } from '../types.js';
import type { DockerCli } from './cli.js';

export interface StageContainer {
  docker: DockerCli;
  name: string;
  /** Everything between `run` and the image: labels, network, mounts, resource flags. */
  flags: string[];
  image: string;
  /** The script's path in the container. */
  script: string;
  /** chown -R the project dir to this uid:gid at the end (runner not root). */
  owner?: { uid: number; gid: number; dir: string };
  /** `--entrypoint` flags and the arguments before `/bin/sh` (entrypoint.ts). */
  entrypoint: { flags: string[]; prefix: string[] };
  /** In-container path of a file the wrapper writes `started` into, when an entrypoint runs first. */
  startedMarker?: string;
  killGraceMs: number;
  /** Leave the container when it ends (without `--rm`): whether it is still there tells a removal apart. */
  keep?: boolean;
}

/** The wrapper; `$0` is the script. */
export function wrapperScript(owner?: StageContainer['owner'], startedMarker?: string): string {
  // -h: links the job made are changed themselves, not what they point at (see image-user.ts).
  const chown = owner ? `chown -R -h ${owner.uid}:${owner.gid} ${quote(owner.dir)} 2>/dev/null || true; ` : '';
  return [
    ...(startedMarker ? [`echo started > ${quote(startedMarker)} 2>/dev/null`] : []),
    'if command -v bash >/dev/null 2>&1; then s=bash; else s=sh; fi',
    'trap \'kill -TERM "$p" 2>/dev/null\' TERM INT',
    '"$s" "$0" & p=$!',
    'while :; do wait "$p"; r=$?; kill -0 "$p" 2>/dev/null || break; done',
    `${chown}exit "$r"`,
  ].join('\n');
}

function quote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

/** Runs the stage; on abort stops the container (SIGTERM, SIGKILL after the grace period). */
export async function runStageContainer(c: StageContainer, request: StageRequest): Promise<StageResult> {
  if (request.signal.aborted) return { exitCode: null, aborted: true };
  // The trace is the container's log: the default json-file driver would also write every byte to
  // disk on the way, which makes large outputs ~20× slower.
  const child = c.docker.spawn(['run', ...(c.keep ? [] : ['--rm']), '--name', c.name, '--log-driver', 'none', ...c.flags, ...c.entrypoint.flags, c.image, ...c.entrypoint.prefix, '/bin/sh', '-c', wrapperScript(c.owner, c.startedMarker), c.script]);
  child.stdout.on('data', (chunk: Uint8Array) => request.output(chunk));
  child.stderr.on('data', (chunk: Uint8Array) => request.output(chunk));
  let aborted = false;
  let stopping: Promise<void> | undefined;
  const onAbort = (): void => {
    aborted = true;
    stopping = stopContainer(c, () => child.exitCode !== null || child.killed);
  };
  request.signal.addEventListener('abort', onAbort, { once: true });
  const result = await child;
  request.signal.removeEventListener('abort', onAbort);
  await stopping;
  const code = typeof result.exitCode === 'number' ? result.exitCode : null;
  // 128+n is how docker reports a container killed by signal n.
  const signal = code === 137 ? 'SIGKILL' : code === 143 ? 'SIGTERM' : undefined;
  // After an abort, 137 is `docker stop`'s SIGKILL at the end of its grace period.
  const forced = aborted && signal === 'SIGKILL' ? { killedAfterMs: stopGraceS(c) * 1000 } : {};
  return { exitCode: code, ...(signal ? { signal } : {}), aborted, ...forced };
}

/** `docker stop -t <grace>`, retried while the container may not exist yet (still being created). */
async function stopContainer(c: StageContainer, runEnded: () => boolean): Promise<void> {
  const grace = String(stopGraceS(c));
  for (let attempt = 0; attempt < 50 && !runEnded(); attempt += 1) {
    try {
      await c.docker.run(['stop', '--time', grace, c.name]);
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

/** `docker stop --time` takes whole seconds. */
function stopGraceS(c: StageContainer): number {
  return Math.ceil(c.killGraceMs / 1000);
}
