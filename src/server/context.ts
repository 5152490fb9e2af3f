/** What every request handler of the reference server can reach. */
import type { Logger } from '../log/index.js';
import type { FaultRegistry } from './faults.js';
import type { BodyPools } from './http/guarded-body.js';
import type { ArtifactStore } from './state/artifacts.js';
import type { Scheduler } from './state/scheduler.js';
import type { BuildRecord, PipelineRecord, Store } from './state/store.js';
import type { TraceStore } from './state/traces.js';

/**
 * Runs trigger jobs (`state/bridges.ts` makes one). Declared here, not there, because bridges are
 * built from the context they are part of.
 */
export interface BridgeRunner {
  /** Starts a pending trigger job (once; later calls for it, and calls for other jobs, do nothing). */
  start(build: BuildRecord): void;
  /** A child pipeline moved: a `strategy: depend` trigger job takes its status when it ends. */
  childMoved(pipeline: PipelineRecord): void;
}

export interface ServerSettings {
  registrationToken: string;
  adminToken: string;
  maxArtifactsSize: number;
  longPollMs: number;
  /** Runner tokens expire this long after they are issued; 0 = never. */
  runnerTokenExpiresInMs: number;
  staleBuildTimeoutMs: number;
  stuckPendingTimeoutMs: number;
  defaultJobTimeout: number;
  /**
   * Seconds, ≥ 1: `X-GitLab-Trace-Update-Interval` on API v4 trace and job answers (and on v1's trace
   * answers): how often a runner sends its log and keep-alives, and so how soon it hears of a cancel.
   */
  traceUpdateIntervalS: number;
}

export interface ServerContext {
  readonly store: Store;
  readonly scheduler: Scheduler;
  readonly traces: TraceStore;
  readonly artifacts: ArtifactStore;
  readonly faults: FaultRegistry;
  /** Memory for request bodies, shared by every request: many clients together cannot make it buffer without bound. */
  readonly bodies: BodyPools;
  readonly settings: ServerSettings;
  readonly logger: Logger;
  readonly dataDir: string;
  /** Aborts when the server closes: ends long polls and hung requests. */
  readonly closing: AbortSignal;
  /** `http://host:port`, known once listening. */
  baseUrl(): string;
  /** Runs trigger jobs (`state/bridges.ts`); set once the server is built. */
  bridges?: BridgeRunner;
}
