/** E1 (register a runner) and E2 (delete a runner), docs/protocol-v1.md §4.1–§4.2. */
import type { ServerContext } from '../context.js';
import { boolParam, stringParam } from '../http/body.js';
import { contactProblem, parseInfo } from '../state/runner-contact.js';
import { createRunner, registrationScope } from '../state/runner-registry.js';
import { errorReply, json, type Reply } from '../http/reply.js';
import { deleteRunner as deleteRunnerRecord } from '../state/transitions.js';
import { readParams, registrationGate, runnerGate, type ApiRequest } from './request.js';

/** `tag_list` as v1 sends it (comma-separated string) or as an array (§12 item 16). */
export function parseTags(value: unknown): string[] {
  const raw = typeof value === 'string' ? value.split(',') : Array.isArray(value) ? value.filter((t): t is string => typeof t === 'string') : [];
  return [...new Set(raw.map((tag) => tag.trim()).filter((tag) => tag !== ''))];
}

export async function registerRunner(ctx: ServerContext, request: ApiRequest): Promise<Reply> {
  const read = await readParams(ctx, request, registrationGate(ctx, request));
  if (!read.ok) return read.reply;
  const { params } = read;
  const token = stringParam(params, 'token');
  if (!token || token.trim() === '') return errorReply(400, '400 (Bad request) "token" not given');
  const scope = registrationScope(ctx, token);
  if (!scope) return errorReply(403);
  const problem = contactProblem(params.info, undefined);
  if (problem) return errorReply(400, `400 (Bad request) ${problem}`);
  const tags = parseTags(params.tag_list);
  const runUntagged = boolParam(params, 'run_untagged', true);
  if (tags.length === 0 && !runUntagged) {
    // The real server refused to save such a runner and answered 404 (§12 item 17).
    return errorReply(404, '404 Not Found - a runner without tags must accept untagged builds (run_untagged)');
  }
  const runner = createRunner(ctx, {
    registration: 'registration',
    description: typeof params.description === 'string' ? params.description : '',
    tags,
    runUntagged,
    locked: boolParam(params, 'locked', false),
    projectId: scope.projectId,
    info: parseInfo(params.info),
  });
  runner.contactedAt = new Date();
  return json(201, { id: runner.id, token: runner.token });
}

export async function deleteRunner(ctx: ServerContext, request: ApiRequest): Promise<Reply> {
  const read = await readParams(ctx, request, runnerGate(ctx, request));
  if (!read.ok) return read.reply;
  const token = stringParam(read.params, 'token');
  if (!token) return errorReply(400, '400 (Bad request) "token" not given');
  const runner = ctx.store.runnerByToken(token);
  if (!runner) return errorReply(403);
  deleteRunnerRecord(ctx, runner);
  return json(200, { id: runner.id });
}
