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

export interface RunnerObserver {
  /** One coordinator call: `endpoint` is the client method, `status` -1 for a transport error. */
  request(runner: string, endpoint: string, status: number, seconds: number): void;
  /** Trace bytes the server acknowledged; `end` is the job's trace length it now holds. */
  traceSent(runner: string, jobId: number, bytes: number, end: number): void;
  /** A 416 answer: the server's trace length differed from ours and the sender resynced. */
  traceResync(runner: string): void;
  artifactBytes(runner: string, direction: Direction, bytes: number): void;
  cacheBytes(runner: string, direction: Direction, bytes: number): void;
  /** `kind` is one of a fixed few (transport, runner_forbidden, ...), never free text. */
  error(kind: string): void;
  jobStarted(runner: RunnerConfig, build: BuildPayload): void;
  jobStage(build: BuildPayload, stage: string): void;
  jobFinished(runner: RunnerConfig, build: BuildPayload, outcome: JobOutcome): void;
  configReloaded(ok: boolean): void;
}

/** Where the daemon finds its observer; `current` comes and goes with `listen_address`. */
export interface ObserverSlot {
  current?: RunnerObserver | undefined;
}

/** The `runner` label: the entry's name (bounded, chosen by the operator; never a token or URL). */
export function runnerLabel(runner: Pick<RunnerConfig, 'name'>): string {
  return runner.name;
}
