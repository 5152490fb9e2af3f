/**
 * What the daemon tells its metrics: one small interface, implemented by the prom-client registry
 * (`registry.ts`) only when `listen_address` is set. The daemon holds an `ObserverSlot` whose
 * `current` is empty otherwise, so with no metrics server each touch point is one property read, and
 * prom-client is never loaded.
 */
import type { BuildPayload } from '../../protocol/types.js';
import type { RunnerConfig } from '../config/schema.js';
import type { JobOutcome } from '../job/run-job.js';

export type Direction = 'up' | 'down';

/** What the metrics need of a `[[runners]]` entry to label it (its token, shortened, and name). */
export type RunnerRef = Pick<RunnerConfig, 'name' | 'token'>;

/** The state of the process, as GitLab Runner's `gitlab_runner_process_state_info` names it. */
export type ProcessState = 'starting' | 'running' | 'graceful-shutdown' | 'forceful-shutdown';

export interface RunnerObserver {
  /** One coordinator call: `call` is the client method, `status` -1 for a transport error. */
  request(runner: RunnerRef, call: string, status: number, seconds: number): void;
  /** A job request went out (`started`) or came back (`ok`: answered, with or without a job). */
  jobRequest(runner: RunnerRef, phase: 'started' | 'ended', ok?: boolean): void;
  /** Trace bytes the server acknowledged; `end` is the job's trace length it now holds. */
  traceSent(runner: RunnerRef, jobId: number, bytes: number, end: number): void;
  /** A 416 answer: the server's trace length differed from ours and the sender resynced. */
  traceResync(runner: RunnerRef): void;
  artifactBytes(runner: RunnerRef, direction: Direction, bytes: number): void;
  /** Cache archive bytes of a running job (labelled with its runner). */
  cacheBytes(build: BuildPayload, direction: Direction, bytes: number): void;
  /** `kind` is one of a fixed few (transport, runner_forbidden, ...), never free text. */
  error(kind: string): void;
  jobStarted(runner: RunnerConfig, build: BuildPayload): void;
  jobStage(build: BuildPayload, stage: string): void;
  jobFinished(runner: RunnerConfig, build: BuildPayload, outcome: JobOutcome): void;
  configReloaded(ok: boolean): void;
  /** config.toml was written by the daemon (a rotated token), or writing it failed. */
  configSaved(ok: boolean): void;
  processState(state: ProcessState): void;
}

/** Where the daemon finds its observer; `current` comes and goes with `listen_address`. */
export interface ObserverSlot {
  current?: RunnerObserver | undefined;
}
