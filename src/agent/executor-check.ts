/**
 * Whether a runner entry's executor can run jobs on this machine right now. The agent asks before an
 * entry polls, so a job is never taken only to fail it: a docker entry whose CLI is missing or whose
 * engine does not answer waits (and is asked again) instead, as does a kubernetes entry whose cluster
 * does not answer or whose account lacks a permission the executor needs. The shell executor needs nothing.
 */
import { lastLine, runCommand } from '../util/command.js';
import { sleep } from '../util/timers.js';
import type { Logger } from '../log/index.js';
import type { RunnerConfig } from './config/schema.js';

export type ExecutorCheck = { ok: true; detail?: string } | { ok: false; reason: string };

export type CheckExecutor = (runner: RunnerConfig, signal?: AbortSignal) => Promise<ExecutorCheck>;

/** How long `docker version` may take before the engine counts as not answering. */
export const DOCKER_CHECK_TIMEOUT_MS = 5_000;

/** Checks the executor of `runner`; never throws. */
export const checkExecutor: CheckExecutor = async (runner, signal) => {
  if (runner.executor === 'kubernetes') return (await import('../executors/kubernetes/access.js')).kubernetesCheck(runner.kubernetes, signal);
  if (runner.executor !== 'docker') return { ok: true };
  return checkDocker(runner.docker.cli, runner.docker.host, signal);
};

/**
 * Runs `<cli> version` against the configured host (DOCKER_HOST). It reports the server too, so it
 * exits non-zero when the CLI is there but the engine is not (stopped dockerd, wrong socket, no
 * access). No `--format`: podman's template fields differ from docker's.
 */
export async function checkDocker(cli: string, host: string | undefined, signal?: AbortSignal, timeoutMs = DOCKER_CHECK_TIMEOUT_MS): Promise<ExecutorCheck> {
  const where = host ? ` at ${host}` : '';
  const result = await runCommand(cli, ['version'], {
    ...(host ? { env: { DOCKER_HOST: host } } : {}),
    timeoutMs,
    killSignal: 'SIGKILL',
    maxBuffer: 64 * 1024,
    ...(signal ? { signal } : {}),
  });
  if (!result.failed) return { ok: true, detail: `${cli} engine${where} answers${serverVersion(result.stdout)}` };
  if (result.code === 'ENOENT') {
    return { ok: false, reason: `the docker CLI "${cli}" was not found; install docker (Debian: docker.io) or set [runners.docker] cli` };
  }
  if (result.code === 'EACCES') return { ok: false, reason: `the docker CLI "${cli}" cannot be executed (permission denied)` };
  if (result.timedOut || result.isCanceled || result.signal) {
    return { ok: false, reason: `the docker engine${where} did not answer \`${cli} version\` within ${timeoutMs / 1000} s` };
  }
  const said = lastLine(result.stderr) || lastLine(result.stdout) || `\`${cli} version\` exited with ${String(result.exitCode)}`;
  return { ok: false, reason: `the docker engine${where} does not answer: ${said}` };
}

/** `, version X` from the Server section of `docker version`, when there is one. */
function serverVersion(stdout: string): string {
  const server = stdout.slice(Math.max(0, stdout.search(/^Server/m)));
  const match = /Version:\s*(\S+)/.exec(server);
  return match ? `, version ${match[1] ?? ''}` : '';
}

export interface ExecutorGateOptions {
  check: CheckExecutor;
  /** Pause between checks while the executor cannot work (the agent's default is a minute). */
  recheckMs: number;
  logger: Logger;
  /** Shutdown: stop checking. */
  stop: AbortSignal;
  /** Aborts to end a pause early and check at once (a reload may have fixed the settings). */
  wake?: () => AbortSignal;
  /** Told every check's result (readiness reports why an entry takes no jobs). */
  onResult?: (result: ExecutorCheck) => void;
}

/**
 * Resolves true once the executor of `runner()` works, false when `stop` aborts or `gone()` (the
 * entry left the config) first. `runner` is read again before each check, so a reload that fixes
 * `[runners.docker] cli` or `host` is used at the next check (at once when the reload aborts `wake`).
 * The reason is logged when it first appears or changes, not once a minute forever.
 */
export async function waitForExecutor(runner: () => RunnerConfig, gone: () => boolean, options: ExecutorGateOptions): Promise<boolean> {
  let lastReason: string | undefined;
  while (!options.stop.aborted && !gone()) {
    const config = runner();
    const log = options.logger.child({ runner: config.name, executor: config.executor });
    const result = await options.check(config, options.stop);
    if (options.stop.aborted || gone()) return false;
    options.onResult?.(result);
    if (result.ok) {
      if (lastReason !== undefined) log.info({ detail: result.detail }, `runner "${config.name}": the ${config.executor} executor works now; taking jobs`);
      else if (result.detail) log.debug({ detail: result.detail }, 'executor available');
      return true;
    }
    const every = `${Math.round(options.recheckMs / 1000)} s`;
    if (result.reason !== lastReason) {
      log.error({ reason: result.reason, recheckS: options.recheckMs / 1000 }, `runner "${config.name}" takes no jobs: ${result.reason}; checking again every ${every}`);
    } else log.debug({ reason: result.reason }, 'executor still unavailable');
    lastReason = result.reason;
    const wake = options.wake?.();
    await sleep(options.recheckMs, wake ? AbortSignal.any([options.stop, wake]) : options.stop).catch(() => undefined);
  }
  return false;
}
