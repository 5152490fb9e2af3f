/** E1 (register a runner) and E2 (delete a runner), docs/protocol-v1.md §4.1–§4.2. */
import type { ServerContext } from '../context.js';
import { boolParam, stringParam, type Params } from '../http/body.js';
import { errorReply, json, type Reply } from '../http/reply.js';
import { finishBuild } from '../state/transitions.js';
import { readParams, registrationGate, runnerGate, type ApiRequest } from './request.js';

/** `tag_list` as v1 sends it (comma-separated string) or as an array (§12 item 16). */
export function parseTags(value: unknown): string[] {
  const raw = typeof value === 'string' ? value.split(',') : Array.isArray(value) ? value.filter((t): t is string => typeof t === 'string') : [];
  return [...new Set(raw.map((tag) => tag.trim()).filter((tag) => tag !== ''))];
}

/** The stored subset of `info` (§4.10): string fields only; `features` is ignored. */
export function parseInfo(value: unknown): Record<string, string> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return {};
  const info: Record<string, string> = {};
  for (const key of ['name', 'version', 'revision', 'platform', 'architecture']) {
    const field = (value as Params)[key];
    if (typeof field === 'string') info[key] = field;
  }
  return info;
}

export async function registerRunner(ctx: ServerContext, request: ApiRequest): Promise<Reply> {
  const read = await readParams(ctx, request, registrationGate(ctx, request));
  if (!read.ok) return read.reply;
  const { params } = read;
  const token = stringParam(params, 'token');
  if (!token || token.trim() === '') return errorReply(400, '400 (Bad request) "token" not given');
  let projectId: number | null = null;
  if (token !== ctx.settings.registrationToken) {
    const project = ctx.store.projectByRunnersToken(token);
    if (!project) return errorReply(403);
    projectId = project.id;
  }
  const tags = parseTags(params.tag_list);
  const runUntagged = boolParam(params, 'run_untagged', true);
  if (tags.length === 0 && !runUntagged) {
    // The real server refused to save such a runner and answered 404 (§12 item 17).
    return errorReply(404, '404 Not Found - a runner without tags must accept untagged builds (run_untagged)');
  }
  const runner = ctx.store.addRunner({
    description: typeof params.description === 'string' ? params.description : '',
    tags,
    runUntagged,
    locked: boolParam(params, 'locked', false),
    projectId,
    info: parseInfo(params.info),
  });
  runner.contactedAt = new Date();
  ctx.logger.info({ runnerId: runner.id, shared: projectId === null, tags }, 'runner registered');
  return json(201, { id: runner.id, token: runner.token });
}

export async function deleteRunner(ctx: ServerContext, request: ApiRequest): Promise<Reply> {
  const read = await readParams(ctx, request, runnerGate(ctx, request));
  if (!read.ok) return read.reply;
  const token = stringParam(read.params, 'token');
  if (!token) return errorReply(400, '400 (Bad request) "token" not given');
  const runner = ctx.store.runnerByToken(token);
  if (!runner) return errorReply(403);
  ctx.store.deleteRunner(runner.id);
  // Builds the deleted runner was running can never be reported again: fail them now.
  for (const build of ctx.store.builds.values()) {
    if (build.runnerId === runner.id && build.status === 'running') finishBuild(ctx, build, 'failed', 'runner deleted');
  }
  ctx.logger.info({ runnerId: runner.id }, 'runner deleted');
  return json(200, { id: runner.id });
}
