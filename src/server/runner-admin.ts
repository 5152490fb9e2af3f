/**
 * Runners as an admin manages them, for the admin API and the web page alike: create one (the modern
 * way: a `glrt-` token, shown in this answer only), list, delete, reset a token, pause and resume.
 */
import type { ServerContext } from './context.js';
import { boolParam, type Params } from './http/body.js';
import { errorReply, json, type Reply } from './http/reply.js';
import { parseTags } from './api/runners.js';
import { createRunner, runnerSettingsProblem, tokenExpiry } from './state/runner-registry.js';
import type { RunnerAccessLevel, RunnerRecord } from './state/store.js';
import { deleteRunner } from './state/transitions.js';

const iso = (date: Date | null): string | null => date?.toISOString() ?? null;

/** What the admin API and the web page both say of a runner: never its token. */
export function runnerSummary(ctx: ServerContext, runner: RunnerRecord) {
  return {
    id: runner.id,
    description: runner.description,
    tags: runner.tags,
    run_untagged: runner.runUntagged,
    locked: runner.locked,
    active: runner.active,
    project: runner.projectId === null ? null : (ctx.store.projects.get(runner.projectId)?.name ?? null),
    contacted_at: iso(runner.contactedAt),
    /** `registration`: a registration token; `created`: the admin API or the web page (a `glrt-` token). */
    registration: runner.registration ?? 'registration',
    /** The API it last asked for a job through (`v1`, `v4`), null before its first request since the server started. */
    api: runner.api ?? null,
    access_level: runner.accessLevel ?? 'not_protected',
    maximum_timeout: runner.maximumTimeout ?? null,
  };
}

/** A runner as the admin API lists it. */
export function runnerAdminView(ctx: ServerContext, runner: RunnerRecord) {
  return {
    ...runnerSummary(ctx, runner),
    paused: !runner.active,
    project_id: runner.projectId,
    maintenance_note: runner.maintenanceNote ?? null,
    info: runner.info,
    managers: (runner.managers ?? []).map((manager) => ({ system_id: manager.systemId, contacted_at: iso(manager.contactedAt), ...manager.info })),
  };
}

function text(params: Params, name: string): string | undefined {
  const value = params[name];
  return typeof value === 'string' ? value.trim() : undefined;
}

/**
 * Creates a runner from an admin's form: `description`, `tags` (a list or comma-separated),
 * `run_untagged` (default: true when it has no tags), `locked`, `project` (a name: a project runner;
 * absent: shared), `paused`, `access_level`, `maximum_timeout` (seconds), `maintenance_note`. Its
 * `glrt-` token is in the record; the caller shows it this once.
 */
export function createRunnerFromForm(ctx: ServerContext, params: Params): { ok: true; runner: RunnerRecord } | { ok: false; reply: Reply } {
  const refuse = (message: string) => ({ ok: false as const, reply: errorReply(400, `400 Bad Request - ${message}`) });
  const tags = parseTags(params.tags ?? params.tag_list);
  const runUntagged = boolParam(params, 'run_untagged', tags.length === 0);
  const projectName = text(params, 'project');
  const project = projectName ? ctx.store.projectByName(projectName) : undefined;
  if (projectName && !project) return refuse(`unknown project "${projectName}"; leave it out for a shared runner`);
  const accessLevel = text(params, 'access_level') || 'not_protected';
  if (accessLevel !== 'not_protected' && accessLevel !== 'ref_protected') return refuse('access_level must be not_protected or ref_protected');
  const timeoutText = params.maximum_timeout;
  const maximumTimeout = timeoutText === undefined || timeoutText === null || timeoutText === '' ? undefined : Number(timeoutText);
  const problem = runnerSettingsProblem({ tags, runUntagged, ...(maximumTimeout !== undefined ? { maximumTimeout } : {}) });
  if (problem) return refuse(problem);
  const note = text(params, 'maintenance_note');
  const runner = createRunner(ctx, {
    registration: 'created',
    description: text(params, 'description') ?? '',
    tags,
    runUntagged,
    locked: boolParam(params, 'locked', false),
    projectId: project?.id ?? null,
    active: !boolParam(params, 'paused', false),
    accessLevel: accessLevel as RunnerAccessLevel,
    ...(maximumTimeout !== undefined ? { maximumTimeout } : {}),
    ...(note ? { maintenanceNote: note } : {}),
  });
  return { ok: true, runner };
}

/** `POST /admin/api/runners`: 201 with the runner and its `glrt-` token, which nothing shows again. */
export function createRunnerReply(ctx: ServerContext, params: Params): Reply {
  const created = createRunnerFromForm(ctx, params);
  if (!created.ok) return created.reply;
  return json(201, { ...runnerAdminView(ctx, created.runner), token: created.runner.token, token_expires_at: created.runner.tokenExpiresAt ?? null });
}

export type RunnerActionResult =
  | { ok: true; runner: RunnerRecord; deleted?: true; token?: string }
  | { ok: false; reply: Reply };

/**
 * `pause`, `resume`, `reset_token` (a new token, for this answer only; the old one stops working) of
 * runner `runnerId`, or `delete` it (its running jobs fail).
 */
export function runnerAction(ctx: ServerContext, runnerId: number, action: string): RunnerActionResult {
  const runner = ctx.store.runners.get(runnerId);
  if (!runner) return { ok: false, reply: errorReply(404, `404 Runner Not Found - no runner #${runnerId}`) };
  if (action === 'pause' || action === 'resume') {
    runner.active = action === 'resume';
    ctx.store.saveRunner(runner);
    if (runner.active) ctx.scheduler.buildsQueued();
    return { ok: true, runner };
  }
  if (action === 'reset_token') {
    const token = ctx.store.resetRunnerToken(runner, tokenExpiry(ctx));
    ctx.logger.info({ runnerId: runner.id }, 'runner token reset by an admin');
    return { ok: true, runner, token };
  }
  if (action === 'delete') {
    deleteRunner(ctx, runner);
    return { ok: true, runner, deleted: true };
  }
  return { ok: false, reply: errorReply(404) };
}
