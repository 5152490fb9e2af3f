/**
 * Which API a runner entry talks, and the client for it. An entry's `api` key says `v4` or `v1`;
 * without one (as every entry GitLab Runner ≥ 9 writes) the server is asked: a token-less
 * `POST /api/v4/runners/verify` that a v4 server refuses (400/403) and a v1-only one does not know
 * (404). `DetectingRunnerApi` asks on its first call, remembers the answer, and retries the question
 * on the next call while it has none (server down, 5xx).
 */
import { CiRunnerError } from '../util/errors.js';
import type { ApiVersion, JobRef, JobUpdate, JobUpdateResult, PatchTraceResult, RunnerApi } from './api.js';
import type { ApiResult } from './api-call.js';
import type { ArtifactDownloadOptions, ArtifactUpload } from './artifact-transfer.js';
import type { RequestBuildResult } from './build-response.js';
import { RunnerApiClient } from './runner-api.js';
import type { TlsMaterial } from './tls.js';
import type { TransportOptions } from './transport.js';
import { RunnerApiV4Client } from './v4/client.js';

/** `v1`, `v4`, or `auto` (ask the server). */
export type ApiChoice = ApiVersion | 'auto';

export interface ConnectOptions extends TransportOptions {
  url: string;
  /** Default `auto`. */
  api?: ApiChoice | undefined;
  executor?: string;
  shell?: string;
  /** This host's id, sent over v4 (config/system-id.ts). */
  systemId?: string | undefined;
  /** The runner's labels and docker `gpus`, sent in the v4 `info`. */
  labels?: Readonly<Record<string, string>>;
  gpus?: string;
  requestTimeoutMs?: number;
  pollTimeoutMs?: number;
}

export type ConcreteClient = RunnerApiClient | RunnerApiV4Client;

/** The client for `options.api`; `auto` gives a client that finds the API on its first call. */
export function createRunnerApi(options: ConnectOptions): RunnerApi {
  const api = options.api ?? 'auto';
  return api === 'auto' ? new DetectingRunnerApi(options) : concreteClient(api, options);
}

/**
 * The client for `options.api`, asking the server now when it is `auto`. Rejects with
 * API_UNKNOWN when the server gives no usable answer (unreachable, 5xx).
 */
export async function connectRunnerApi(options: ConnectOptions, signal?: AbortSignal): Promise<ConcreteClient> {
  const api = options.api ?? 'auto';
  if (api !== 'auto') return concreteClient(api, options);
  const client = new DetectingRunnerApi(options);
  const resolved = await client.resolve(signal);
  if ('concrete' in resolved) return resolved.concrete;
  throw new CiRunnerError('API_UNKNOWN', `cannot tell which runner API ${options.url} serves: ${describe(resolved.failure)}; check the URL, or set api = "v4" (or "v1") in the runner's entry`);
}

function concreteClient(api: ApiVersion, options: ConnectOptions): ConcreteClient {
  const common = {
    url: options.url,
    ...(options.tls ? { tls: options.tls } : {}),
    ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
    ...(options.executor !== undefined ? { executor: options.executor } : {}),
    ...(options.requestTimeoutMs !== undefined ? { requestTimeoutMs: options.requestTimeoutMs } : {}),
    ...(options.pollTimeoutMs !== undefined ? { pollTimeoutMs: options.pollTimeoutMs } : {}),
    ...(options.connectionMaxAgeMs !== undefined ? { connectionMaxAgeMs: options.connectionMaxAgeMs } : {}),
  };
  if (api === 'v1') return new RunnerApiClient(common);
  return new RunnerApiV4Client({
    ...common,
    ...(options.shell ? { shell: options.shell } : {}),
    ...(options.systemId ? { systemId: options.systemId } : {}),
    ...(options.labels ? { labels: options.labels } : {}),
    ...(options.gpus ? { gpus: options.gpus } : {}),
  });
}

/**
 * What the token-less probe's status says: v1 when the server has no such endpoint (404, 405, 501),
 * v4 for any other HTTP answer but a 5xx (a refusal of the empty token, most often), unknown for a
 * 5xx or no answer.
 */
export function apiFromProbe(status: number): ApiVersion | undefined {
  if (status === 404 || status === 405 || status === 501) return 'v1';
  if (status >= 200 && status < 500) return 'v4';
  return undefined;
}

function describe(result: ApiResult): string {
  return result.error ? result.error.message : `HTTP ${result.status}`;
}

type Resolution = { concrete: ConcreteClient } | { failure: ApiResult };

/** A client that asks the server which API it serves on its first call, then forwards every call. */
export class DetectingRunnerApi implements RunnerApi {
  readonly tls: TlsMaterial;
  private concrete: ConcreteClient | undefined;
  private asking: Promise<Resolution> | undefined;
  private readonly probe: RunnerApiV4Client;

  constructor(private readonly options: ConnectOptions) {
    this.tls = options.tls ?? {};
    this.probe = concreteClient('v4', options) as RunnerApiV4Client;
  }

  /** This host's system id once the server is known to serve v4 (over v1 none is sent). */
  get systemId(): string | undefined {
    return this.concrete instanceof RunnerApiV4Client ? this.concrete.systemId : undefined;
  }

  /** The API found. Read only after a call went through (a job came by it). */
  get api(): ApiVersion {
    if (!this.concrete) throw new CiRunnerError('API_NOT_DETECTED', 'the runner API is not known before the first call to the server');
    return this.concrete.api;
  }

  /** The client for the API the server serves, asking it when not known yet. */
  resolve(signal?: AbortSignal): Promise<Resolution> {
    if (this.concrete) return Promise.resolve({ concrete: this.concrete });
    this.asking ??= this.ask(signal).finally(() => {
      this.asking = undefined;
    });
    return this.asking;
  }

  private async ask(signal?: AbortSignal): Promise<Resolution> {
    const answer = await this.probe.verifyRunner('', signal);
    const api = apiFromProbe(answer.status);
    if (api === undefined) return { failure: answer };
    if (api === 'v4') this.concrete = this.probe;
    else {
      await this.probe.close();
      this.concrete = concreteClient('v1', this.options);
    }
    return { concrete: this.concrete };
  }

  async requestBuild(token: string, lastUpdate: string | undefined, signal?: AbortSignal): Promise<RequestBuildResult> {
    const resolved = await this.resolve(signal);
    return 'concrete' in resolved ? resolved.concrete.requestBuild(token, lastUpdate, signal) : { ...resolved.failure, outcome: 'retry', kind: 'error' };
  }

  async verifyRunner(token: string, signal?: AbortSignal): Promise<ApiResult & { alive: boolean | undefined }> {
    const resolved = await this.resolve(signal);
    return 'concrete' in resolved ? resolved.concrete.verifyRunner(token, signal) : { ...resolved.failure, outcome: 'retry', alive: undefined };
  }

  async updateJob(job: JobRef, update: JobUpdate, signal?: AbortSignal): Promise<JobUpdateResult> {
    const resolved = await this.resolve(signal);
    return 'concrete' in resolved ? resolved.concrete.updateJob(job, update, signal) : { ...resolved.failure, outcome: 'retry' };
  }

  async updateJobWithTrace(job: JobRef, state: 'running' | 'success' | 'failed', trace: AsyncIterable<string>, signal?: AbortSignal): Promise<JobUpdateResult> {
    const resolved = await this.resolve(signal);
    return 'concrete' in resolved ? resolved.concrete.updateJobWithTrace(job, state, trace, signal) : { ...resolved.failure, outcome: 'retry' };
  }

  async patchTrace(id: number, jobToken: string, start: number, bytes: Uint8Array, signal?: AbortSignal): Promise<PatchTraceResult> {
    const resolved = await this.resolve(signal);
    return 'concrete' in resolved ? resolved.concrete.patchTrace(id, jobToken, start, bytes, signal) : { ...resolved.failure, outcome: 'retry' };
  }

  async uploadArtifacts(id: number, jobToken: string, file: ArtifactUpload, signal?: AbortSignal): Promise<ApiResult & { body?: unknown }> {
    const resolved = await this.resolve(signal);
    return 'concrete' in resolved ? resolved.concrete.uploadArtifacts(id, jobToken, file, signal) : { ...resolved.failure, outcome: 'retry' };
  }

  async downloadArtifacts(id: number, token: string, destination: string, signal?: AbortSignal, options?: ArtifactDownloadOptions): Promise<ApiResult & { size?: number }> {
    const resolved = await this.resolve(signal);
    return 'concrete' in resolved ? resolved.concrete.downloadArtifacts(id, token, destination, signal, options) : { ...resolved.failure, outcome: 'retry' };
  }

  async close(): Promise<void> {
    await (this.concrete ?? this.probe).close();
  }
}
