/**
 * The v4 runner endpoints (docs/protocol-v4.md §4): register with a registration token (V1), delete a
 * runner (V2) or only this host's manager of it (V3), verify a token (V4: also how a runner created
 * on the server, with a `glrt-` token, is taken into use), and reset the token (V5). Each returns the
 * classified status and what it answers; none throws for server or network failures.
 */
import type { RunnerCredentials, VersionInfo } from '../../protocol/v4/types.js';
import { type ApiContext, type ApiResult, apiResult, decodeJson } from '../api-call.js';
import { USER_AGENT } from '../info.js';
import { TRANSPORT_ERROR, type Endpoint } from '../retryable.js';
import { drain, send, type HttpResponse } from '../transport.js';

export interface RegisterParams {
  /** The registration token. */
  token: string;
  description?: string;
  tagList?: string[];
  runUntagged: boolean;
  locked?: boolean;
  accessLevel?: 'not_protected' | 'ref_protected';
  /** Seconds; 0 or absent = no cap. */
  maximumTimeout?: number;
  paused?: boolean;
  maintenanceNote?: string;
}

/** A runner's credentials as the server gave them. */
export interface RunnerToken {
  id: number;
  token: string;
  /** ISO 8601, or undefined when the token does not expire. */
  tokenExpiresAt?: string;
}

export type VerifyResult = ApiResult & {
  /** true: the token is valid; false: the server does not know it (403); undefined: no answer. */
  alive: boolean | undefined;
  /** The runner's id and token from a JSON answer (GitLab ≥ 16.0 and the reference server). */
  runner?: RunnerToken;
};

/** V1: registers a runner (the legacy flow). `info` says nothing of an executor yet. */
export async function registerRunnerV4(api: ApiContext, params: RegisterParams, info: VersionInfo, signal?: AbortSignal): Promise<ApiResult & { runner?: RunnerToken }> {
  const body = {
    description: params.description ?? '',
    ...(params.tagList && params.tagList.length > 0 ? { tag_list: params.tagList.join(',') } : {}),
    run_untagged: params.runUntagged,
    locked: params.locked ?? true,
    ...(params.accessLevel ? { access_level: params.accessLevel } : {}),
    ...(params.maximumTimeout ? { maximum_timeout: params.maximumTimeout } : {}),
    paused: params.paused ?? false,
    ...(params.maintenanceNote ? { maintenance_note: params.maintenanceNote } : {}),
    info,
    token: params.token,
  };
  const response = await postJson(api, 'POST', 'runners', body, signal);
  const result = apiResult(api, 'registerRunnerV4', response);
  if (result.outcome !== 'ok') {
    await drain(response);
    return result;
  }
  const runner = readCredentials(await decodeJson(response));
  if (!runner) return { status: TRANSPORT_ERROR, outcome: 'retry', error: new Error('the registration answer has no runner token') };
  return { ...result, runner };
}

/**
 * V4: whether `token` is valid. With `systemId` the server records this host as a manager of the
 * runner (and new-flow runners need the JSON answer's id). An answer without a JSON body (servers
 * before 16.0 answer the text `200`) is alive without credentials.
 */
export async function verifyRunnerV4(api: ApiContext, token: string, extra: { systemId?: string; info?: VersionInfo }, signal?: AbortSignal): Promise<VerifyResult> {
  const body = { token, ...(extra.systemId ? { system_id: extra.systemId } : {}), ...(extra.info ? { info: extra.info } : {}) };
  const response = await postJson(api, 'POST', 'runners/verify', body, signal);
  const result = apiResult(api, 'verifyRunnerV4', response);
  if (result.outcome !== 'ok') {
    await drain(response);
    return { ...result, alive: result.outcome === 'final' ? false : undefined };
  }
  const runner = readCredentials(await decodeJson(response));
  return { ...result, alive: true, ...(runner ? { runner } : {}) };
}

/** V2: deletes the runner (every manager). Only 204 is success. */
export async function deleteRunnerV4(api: ApiContext, token: string, signal?: AbortSignal): Promise<ApiResult> {
  return plainCall(api, 'DELETE', 'runners', { token }, 'deleteRunnerV4', signal);
}

/** V3: deletes only this host's manager of a runner created on the server; the runner stays. */
export async function deleteManagerV4(api: ApiContext, token: string, systemId: string, signal?: AbortSignal): Promise<ApiResult> {
  return plainCall(api, 'DELETE', 'runners/managers', { token, system_id: systemId }, 'deleteManagerV4', signal);
}

/** V5: a new token for the runner; the old one stops working at once. */
export async function resetTokenV4(api: ApiContext, token: string, signal?: AbortSignal): Promise<ApiResult & { token?: string; tokenExpiresAt?: string }> {
  const response = await postJson(api, 'POST', 'runners/reset_authentication_token', { token }, signal);
  return resetAnswer(api, response);
}

/** The new token (and its expiry) of a reset's answer. */
async function resetAnswer(api: ApiContext, response: HttpResponse): Promise<ApiResult & { token?: string; tokenExpiresAt?: string }> {
  const result = apiResult(api, 'resetTokenV4', response);
  if (result.outcome !== 'ok') {
    await drain(response);
    return result;
  }
  const decoded = (await decodeJson(response)) as { token?: unknown; token_expires_at?: unknown } | undefined;
  if (typeof decoded?.token !== 'string' || decoded.token === '') {
    return { status: TRANSPORT_ERROR, outcome: 'retry', error: new Error('the token reset answer has no token') };
  }
  return { ...result, token: decoded.token, ...(typeof decoded.token_expires_at === 'string' ? { tokenExpiresAt: decoded.token_expires_at } : {}) };
}

/** V5 with a personal access token: `POST /runners/:id/reset_authentication_token`, the PAT in `PRIVATE-TOKEN`. */
export async function resetTokenWithPatV4(api: ApiContext, runnerId: number, pat: string, signal?: AbortSignal): Promise<ApiResult & { token?: string; tokenExpiresAt?: string }> {
  const response = await send(api.transport, {
    method: 'POST',
    url: new URL(`runners/${runnerId}/reset_authentication_token`, api.baseUrl),
    headers: { accept: 'application/json', 'private-token': pat, 'user-agent': USER_AGENT },
    ...(signal ? { signal } : {}),
  });
  return resetAnswer(api, response);
}

async function plainCall(api: ApiContext, method: 'DELETE', path: string, body: unknown, endpoint: Endpoint, signal?: AbortSignal): Promise<ApiResult> {
  const response = await postJson(api, method, path, body, signal);
  await drain(response);
  return apiResult(api, endpoint, response);
}

/** A JSON call of the v4 API (`Accept` only where a JSON answer is read, as GitLab Runner sends it). */
export function postJson(api: ApiContext, method: 'POST' | 'PUT' | 'DELETE', path: string, body: unknown, signal?: AbortSignal, timeoutMs?: number): Promise<HttpResponse> {
  return send(api.transport, {
    method,
    url: new URL(path, api.baseUrl),
    headers: { 'content-type': 'application/json', accept: 'application/json', 'user-agent': USER_AGENT },
    body: JSON.stringify(body),
    signal,
    headersTimeoutMs: timeoutMs ?? api.requestTimeoutMs,
  });
}

/** `{id, token, token_expires_at}` when the body has a non-empty token. */
function readCredentials(decoded: unknown): RunnerToken | undefined {
  const body = decoded as Partial<RunnerCredentials> | undefined;
  if (typeof body?.token !== 'string' || body.token === '') return undefined;
  return {
    id: typeof body.id === 'number' ? body.id : 0,
    token: body.token,
    ...(typeof body.token_expires_at === 'string' ? { tokenExpiresAt: body.token_expires_at } : {}),
  };
}
