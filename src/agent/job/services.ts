/**
 * What running one job needs from the agent around it: the runner entry, the coordinator's client,
 * the slots, the artifact stages, the trace, the executor and the logger. `run-job.ts` takes it and
 * hands it on to the stages (`stages.ts`).
 */
import type { RunnerApi } from '../../client/api.js';
import type { RunAs } from '../../executors/run-as.js';
import type { Executor } from '../../executors/types.js';
import type { Logger } from '../../log/index.js';
import type { BuildPayload } from '../../protocol/types.js';
import type { JobTrace, StartTraceOptions } from '../../trace/index.js';
import type { RunnerConfig } from '../config/schema.js';
import type { ArtifactStages } from './artifact-stages.js';
import type { SlotAllocator } from './slots.js';

export interface JobServices {
  runner: RunnerConfig;
  client: RunnerApi;
  slots: SlotAllocator;
  stages: ArtifactStages;
  startTrace: (options: StartTraceOptions) => Promise<JobTrace>;
  createExecutor: (runner: RunnerConfig) => Executor | Promise<Executor>;
  logger: Logger;
  /** The user shell jobs run as (global `user`); the job's dirs are made usable by it. */
  runAs?: RunAs;
  /** Observes each job's trace writes (the demo prints live logs). */
  onOutput?: (build: BuildPayload, chunk: string | Uint8Array) => void;
  /** Told when a job enters a stage (metrics: jobs running by stage). */
  onStage?: (build: BuildPayload, stage: string) => void;
  /**
   * Told once the daemon stops: clean-ups its jobs still owe (the paced marker sweeps) start without
   * waiting for their pace, so they do not hold the exit.
   */
  onStopping?: () => void;
}
