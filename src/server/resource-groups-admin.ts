/**
 * The admin API's resource groups, as GitLab's project API has them (`/projects/:id/resource_groups`):
 * `GET …/resource_groups`, `GET …/resource_groups/:key`, `GET …/resource_groups/:key/upcoming_jobs` and
 * `PUT …/resource_groups/:key` with `process_mode` (`unordered`, `oldest_first`, `newest_first`,
 * `newest_ready_first`). `:id` is the project's id or its URL-encoded name (`local%2Fapp`), `:key` the
 * group's name with variables expanded, URL-encoded. A group exists once a pipeline has a job in it,
 * as on GitLab (a `PUT` before that is a 404); its process mode is kept with the project.
 */
import type { IncomingMessage } from 'node:http';
import type { ServerContext } from './context.js';
import { bodyParams, mergeParams } from './http/body.js';
import { readBudgetedBody } from './http/guarded-body.js';
import { errorReply, json, type Reply } from './http/reply.js';
import { PROCESS_MODES, processMode, resourceGroupName, upcomingBuilds } from './state/resource-groups.js';
import type { ProcessMode, ProjectRecord } from './state/store.js';
import { jobView } from './views.js';

interface GroupView {
  key: string;
  process_mode: ProcessMode;
  created_at: string;
  updated_at: string;
}

function decoded(part: string | undefined): string | undefined {
  if (part === undefined) return undefined;
  try {
    return decodeURIComponent(part);
  } catch {
    return undefined;
  }
}

function findProject(ctx: ServerContext, idText: string | undefined): ProjectRecord | undefined {
  const text = decoded(idText);
  if (text === undefined) return undefined;
  return /^\d+$/.test(text) ? ctx.store.projects.get(Number(text)) : ctx.store.projectByName(text);
}

/** The project's groups: every name a job of it had, oldest first. */
function groupsOf(ctx: ServerContext, project: ProjectRecord): Map<string, GroupView> {
  const groups = new Map<string, GroupView>();
  for (const build of ctx.store.builds.values()) {
    if (build.projectId !== project.id) continue;
    const key = resourceGroupName(ctx.store, build);
    if (key === undefined || groups.has(key)) continue;
    const created = build.createdAt.toISOString();
    groups.set(key, { key, process_mode: processMode(ctx.store, project.id, key), created_at: created, updated_at: project.resourceGroups?.[key]?.updatedAt ?? created });
  }
  return groups;
}

/** Routes `parts` = [project id, 'resource_groups', key?, 'upcoming_jobs'?]. */
export async function resourceGroupsAdmin(ctx: ServerContext, req: IncomingMessage, method: string, parts: readonly string[], query: URLSearchParams, signal: AbortSignal): Promise<Reply> {
  const [idText, , keyText, action, extra] = parts;
  const project = findProject(ctx, idText);
  if (!project) return errorReply(404, '404 Project Not Found');
  const groups = groupsOf(ctx, project);
  if (keyText === undefined) return method === 'GET' ? json(200, [...groups.values()]) : errorReply(405);
  const key = decoded(keyText);
  const group = key === undefined ? undefined : groups.get(key);
  if (extra !== undefined || (action !== undefined && action !== 'upcoming_jobs')) return errorReply(404);
  if (!group || key === undefined) return errorReply(404, '404 Resource Group Not Found');
  if (action === 'upcoming_jobs') return method === 'GET' ? json(200, upcomingBuilds(ctx.store, project.id, key).map(jobView)) : errorReply(405);
  if (method === 'GET') return json(200, group);
  if (method !== 'PUT') return errorReply(405);
  const params = mergeParams(query, await bodyParams(req, await readBudgetedBody(req, 64 * 1024, ctx.bodies.main, signal)));
  const mode = params.process_mode;
  if (mode === undefined) return json(200, group);
  if (typeof mode !== 'string' || !(PROCESS_MODES as readonly string[]).includes(mode)) {
    return errorReply(400, `400 Bad Request - process_mode does not have a valid value (one of ${PROCESS_MODES.join(', ')})`);
  }
  const updatedAt = new Date().toISOString();
  const previous = project.resourceGroups;
  project.resourceGroups = { ...previous, [key]: { processMode: mode as ProcessMode, updatedAt } };
  try {
    ctx.store.saveProject(project);
  } catch (error) {
    project.resourceGroups = previous;
    throw error;
  }
  ctx.logger.info({ project: project.name, resourceGroup: key, processMode: mode }, 'resource group process mode set');
  return json(200, { ...group, process_mode: mode, updated_at: updatedAt });
}
