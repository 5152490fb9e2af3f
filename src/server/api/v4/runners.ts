/**
 * API v4's runner endpoints (docs/protocol-v4.md §2): V1 `POST /runners` (register with a registration
 * token), V2 `DELETE /runners`, V3 `DELETE /runners/managers`, V4 `POST /runners/verify` and V5
 * `POST /runners/reset_authentication_token`. Runners created on the server (`glrt-` tokens) never
 * call V1: they verify with their `system_id`.
 */
import type { ServerContext } from '../../context.js';
import { boolParam, stringParam, type Params } from '../../http/body.js';
import { errorReply, json, type Reply } from '../../http/reply.js';
import { contactProblem, noteContact, parseInfo, removeManager } from '../../state/runner-contact.js';
import { createRunner, registrationScope, runnerSettingsProblem, tokenExpiry } from '../../state/runner-registry.js';
import type { RunnerAccessLevel, RunnerRecord } from '../../state/store.js';
import { deleteRunner } from '../../state/transitions.js';
import { parseTags } from '../runners.js';
import { readParams, registrationGate, type ApiRequest } from '../request.js';
import { callingRunner, runnerGateV4 } from './auth.js';

const ACCESS_LEVELS: readonly RunnerAccessLevel[] = ['not_protected', 'ref_protected'];

function bad(message: string): Reply {
  return errorReply(400, `400 Bad request - ${message}`);
}

/** `{id, token, token_expires_at}` (null: the token does not expire). */
function details(runner: RunnerRecord): Record<string, unknown> {
  return { id: runner.id, token: runner.token, token_expires_at: runner.tokenExpiresAt ?? null };
}

/** `active` (runners ≤ 14) or `paused` (≥ 15): whether the new runner takes jobs; both at once is refused. */
function activeParam(params: Params): boolean | string {
  if (params.active !== undefined && params.paused !== undefined) return 'active, paused are mutually exclusive';
  if (params.paused !== undefined) return !boolParam(params, 'paused', false);
  return boolParam(params, 'active', true);
}

function maximumTimeoutParam(params: Params): number | undefined | string {
  const value = params.maximum_timeout;
  if (value === undefined || value === null || value === '') return undefined;
  const seconds = typeof value === 'number' ? value : typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : NaN;
  return Number.isFinite(seconds) ? seconds : 'maximum_timeout is invalid';
}

export async function registerRunnerV4(ctx: ServerContext, request: ApiRequest): Promise<Reply> {
  const read = await readParams(ctx, request, registrationGate(ctx, request));
  if (!read.ok) return read.reply;
  const { params } = read;
  const token = stringParam(params, 'token');
  if (!token) return bad('token is missing');
  const scope = registrationScope(ctx, token);
  if (!scope) return errorReply(403);
  const infoProblem = contactProblem(params.info, undefined);
  if (infoProblem) return bad(infoProblem);
  const active = activeParam(params);
  if (typeof active === 'string') return bad(active);
  const accessLevel = params.access_level ?? 'not_protected';
  if (!ACCESS_LEVELS.includes(accessLevel as RunnerAccessLevel)) return bad(`access_level does not have a valid value (${ACCESS_LEVELS.join(', ')})`);
  const maximumTimeout = maximumTimeoutParam(params);
  if (typeof maximumTimeout === 'string') return bad(maximumTimeout);
  const fields = {
    tags: parseTags(params.tag_list),
    runUntagged: boolParam(params, 'run_untagged', true),
    ...(maximumTimeout !== undefined ? { maximumTimeout } : {}),
  };
  const problem = runnerSettingsProblem(fields);
  if (problem) return bad(problem);
  const runner = createRunner(ctx, {
    ...fields,
    registration: 'registration',
    description: typeof params.description === 'string' ? params.description : '',
    locked: boolParam(params, 'locked', false),
    projectId: scope.projectId,
    info: parseInfo(params.info),
    active,
    accessLevel: accessLevel as RunnerAccessLevel,
    ...(typeof params.maintenance_note === 'string' ? { maintenanceNote: params.maintenance_note } : {}),
  });
  runner.contactedAt = new Date();
  return json(201, details(runner));
}

/** Reads the body (runner token gated) and finds the calling runner; 403 when the token is unknown. */
async function runnerCall(ctx: ServerContext, request: ApiRequest): Promise<{ runner: RunnerRecord; params: Params } | { reply: Reply }> {
  const read = await readParams(ctx, request, runnerGateV4(ctx, request));
  if (!read.ok) return { reply: read.reply };
  const runner = callingRunner(ctx, request, read.params);
  return runner ? { runner, params: read.params } : { reply: errorReply(403) };
}

export async function verifyRunnerV4(ctx: ServerContext, request: ApiRequest): Promise<Reply> {
  const call = await runnerCall(ctx, request);
  if ('reply' in call) return call.reply;
  const systemId = stringParam(call.params, 'system_id');
  const problem = contactProblem(call.params.info, systemId);
  if (problem) return bad(problem);
  noteContact(ctx.store, call.runner, { info: call.params.info, systemId });
  return json(200, details(call.runner));
}

export async function deleteRunnerV4(ctx: ServerContext, request: ApiRequest): Promise<Reply> {
  const call = await runnerCall(ctx, request);
  if ('reply' in call) return call.reply;
  deleteRunner(ctx, call.runner);
  return { status: 204 };
}

export async function deleteManagerV4(ctx: ServerContext, request: ApiRequest): Promise<Reply> {
  const call = await runnerCall(ctx, request);
  if ('reply' in call) return call.reply;
  const systemId = stringParam(call.params, 'system_id');
  if (!systemId) return bad('system_id is missing');
  if (!removeManager(ctx.store, call.runner, systemId)) return errorReply(404, '404 Runner Manager Not Found');
  ctx.logger.info({ runnerId: call.runner.id, systemId }, 'runner manager deleted');
  return { status: 204 };
}

/**
 * `POST /runners/:id/reset_authentication_token` with a personal access token in `PRIVATE-TOKEN`
 * (GitLab Runner's `reset-token --pat`): this server's admin token stands for a PAT that may manage
 * the runner. 401 without one, 403 with another, 404 for no such runner.
 */
export async function resetTokenByIdV4(ctx: ServerContext, request: ApiRequest): Promise<Reply> {
  const header = request.req.headers['private-token'];
  const pat = Array.isArray(header) ? header[0] : header;
  if (!pat) return errorReply(401, '401 Unauthorized');
  if (pat !== ctx.settings.adminToken) return errorReply(403);
  const runner = request.buildId === undefined ? undefined : ctx.store.runners.get(request.buildId);
  if (!runner) return errorReply(404, '404 Runner Not Found');
  const token = ctx.store.resetRunnerToken(runner, tokenExpiry(ctx));
  ctx.logger.info({ runnerId: runner.id, expiresAt: runner.tokenExpiresAt }, 'runner token reset with a personal access token');
  return json(201, { token, token_expires_at: runner.tokenExpiresAt ?? null });
}

export async function resetTokenV4(ctx: ServerContext, request: ApiRequest): Promise<Reply> {
  const call = await runnerCall(ctx, request);
  if ('reply' in call) return call.reply;
  const token = ctx.store.resetRunnerToken(call.runner, tokenExpiry(ctx));
  ctx.logger.info({ runnerId: call.runner.id, expiresAt: call.runner.tokenExpiresAt }, 'runner token reset');
  return json(201, { token, token_expires_at: call.runner.tokenExpiresAt ?? null });
}
