/**
 * Public shapes of the reference server: options, fault rules and the views the
 * admin API and `ReferenceServer` methods return. `index.ts` re-exports them.
 */
import type { Logger } from '../log/index.js';

export type FaultEndpoint =
  | 'register_runner'
  | 'delete_runner'
  | 'request_build'
  | 'update_build'
  | 'patch_trace'
  | 'upload_artifacts'
  | 'download_artifacts'
  | 'delete_artifacts'
  | 'verify_runner'
  | 'reset_runner_token'
  | 'delete_runner_manager'
  | 'git'
  | '*';

export type FaultAction = 'error' | 'delay' | 'hang' | 'apply_then_error' | 'close';

export interface FaultRule {
  endpoint: FaultEndpoint;
  /** error: answer `status` (default 500) without processing.
   *  delay: wait delayMs, then process normally.
   *  hang: never answer (until the client gives up or the server closes).
   *  apply_then_error: process normally (state changes!), then answer `status` (default 500) instead —
   *                    a lost ack: the next PATCH gets 416.
   *  close: process normally, then destroy the socket mid-response (headers sent, body cut). */
  action: FaultAction;
  status?: number;
  delayMs?: number;
  /** 0-100, default 100. */
  percent?: number;
  /** Fire at most this many times (default unlimited). */
  count?: number;
  /** Only requests about this build. */
  buildId?: number;
}

export interface ReferenceServerOptions {
  /** Default '127.0.0.1'. */
  host?: string;
  /** Default 0 (library); the CLI default is 8080. */
  port?: number;
  registrationToken?: string;
  adminToken?: string;
  /** Traces and artifacts live on disk here; a temp dir when absent (removed on close). */
  dataDir?: string;
  /** Bytes, default 100 MB; an upload of size >= limit gets 413. */
  maxArtifactsSize?: number;
  /**
   * Bytes of request bodies held in memory at once across all requests (default 128 MiB). Requests
   * beyond it wait, unread, for their turn; a single body is still capped per route (64 MiB for E5/E6).
   */
  requestBodyMemory?: number;
  /** 0/undefined = off. */
  longPollMs?: number;
  /**
   * Runner tokens (v4) expire this many ms after they are issued, as GitLab's "runner authentication
   * token expiry" does: answers carry `token_expires_at`, an expired token is refused (403) and
   * `POST /runners/reset_authentication_token` gives a fresh one. 0/undefined = tokens never expire.
   */
  runnerTokenExpiresInMs?: number;
  /** Fail running builds with no E5/E6 for this long (default 1 h). */
  staleBuildTimeoutMs?: number;
  /** Fail pending builds that no runner can take (tags, untagged, project) after this long (default 1 h, as GitLab). */
  stuckPendingTimeoutMs?: number;
  /** Seconds; the payload `timeout` when the job sets none (default 3600). */
  defaultJobTimeout?: number;
  /**
   * Whole seconds (default 1): the `X-GitLab-Trace-Update-Interval` runners are told — how often they
   * send their log and keep-alives while a job runs, so how soon they learn of a cancel.
   */
  traceUpdateIntervalS?: number;
  /** name 'namespace/project', path = a git repository on disk. */
  projects?: Array<{ name: string; path: string }>;
  faults?: FaultRule[];
  /** Makes fault percentages deterministic. */
  faultSeed?: number;
  /** Silent when absent. */
  logger?: Logger;
  /** Serve https instead of http (API, admin API and git alike). */
  tls?: ServerTls;
}

/** PEM text (not paths) of the server's certificate and key, and optionally of the CA clients must present a certificate from. */
export interface ServerTls {
  cert: string;
  key: string;
  /** When set, every connection must present a client certificate issued by this CA (mutual TLS). */
  clientCa?: string;
}

export interface PipelineView {
  id: number;
  status: string;
  /** `CI_PIPELINE_SOURCE` (`push` for pipelines created through the admin API unless it says otherwise). */
  source: string;
  /** What `workflow: rules` decided (`no workflow rules` when the file has none). */
  workflow: string;
  /** `workflow: name`, expanded (absent when the file names none). */
  name?: string;
  /** Keys of the file this server accepts but does not apply, one line each (absent when none). */
  not_applied?: string[];
  /** The current build of each job (a retry replaces the build it retried). */
  jobs: Array<{
    id: number;
    name: string;
    stage: string;
    status: string;
    when: string;
    allow_failure: boolean;
    /** The rule outcome that created the job (null for pipelines stored before rules existed). */
    rule: string | null;
    /** Absent: the job follows stage order; else the jobs it waits for (`[]`: none). */
    needs?: Array<{ job: string; artifacts: boolean; optional: boolean }>;
  }>;
  /** Builds replaced by a retry, oldest first (absent when none). */
  retried?: Array<{ id: number; name: string; stage: string; status: string }>;
  /** A child pipeline: its parent pipeline and the trigger job that created it. */
  parent?: { id: number; job_id: number };
  /** The child pipelines its trigger jobs created, oldest first. */
  downstream?: Array<{ id: number; job_id: number; job: string; status: string }>;
  /** Jobs of the file that the rules left out of this pipeline (never created), with the reason. */
  excluded: Array<{ name: string; stage: string; rule: string }>;
}

export interface JobView {
  id: number;
  name: string;
  stage: string;
  status: string;
  runner_id: number | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  trace_size: number;
  artifacts: { filename: string; size: number; expire_at: string | null } | null;
  when?: string;
  allow_failure?: boolean;
  needs?: Array<{ job: string; artifacts: boolean; optional: boolean }>;
  /** GitLab's failure reason of a failed job (`script_failure`, `runner_system_failure`, …). */
  failure_reason?: string;
  /** The script's exit status of a failed job (API v4's `exit_code`; over v1, read from the log's failure line). */
  exit_code?: number;
  /** What the job's `coverage:` regex found in its trace, a percentage. */
  coverage?: number | null;
  /** Replaced by a retry. */
  retried?: boolean;
  /** 0 for a job's first build, 1 for its first retry, … */
  attempt?: number;
  /** When a delayed job is queued. */
  scheduled_at?: string | null;
  /** Variable names from the job's dotenv report (values are not shown: they may be secrets). */
  dotenv_variables?: string[];
  /** A trigger job: the server runs it (a child pipeline, or a note why not); its log says what it did. */
  trigger?: boolean;
  /** The `artifacts:reports` it uploaded (other than dotenv): GitLab's type, file name, size. */
  reports?: Array<{ type: string; filename: string; size: number }>;
  /** What its JUnit report says. */
  tests?: { total: number; passed: number; failed: number; skipped: number; failed_names: string[] };
  /** Its `resource_group:`, as written. */
  resource_group?: string;
}
