/**
 * `resource_group:` as GitLab runs it. Jobs of one group (per project: the job's `resource_group` with
 * its variables expanded, as GitLab expands it) never run at the same time: the group has one resource.
 * A job of a group whose turn comes is `waiting_for_resource`, not `pending`; the resource goes to one
 * waiting job (which becomes `pending`) when no job holds it, and a job holds it while `pending` or
 * `running`, until it ends.
 *
 * Which job gets the resource is the group's process mode (GitLab's `Ci::ResourceGroup`
 * `upcoming_processables`, then `AssignResourceFromResourceGroupService`, which tries only the first):
 * - `unordered` (the default): a waiting job (here the oldest);
 * - `oldest_first` / `newest_first`: the job of the oldest / newest pipeline among the jobs waiting
 *   *or still to come* (`created`, `scheduled`), a waiting one first within a pipeline — when the first
 *   in that order has not come yet, the resource stays free until it does;
 * - `newest_ready_first`: the waiting job of the newest pipeline.
 * GitLab sets the mode through its API; here `PUT /admin/api/projects/:id/resource_groups/:key`
 * (admin.ts), kept with the project.
 */
import type { BuildStatus } from '../../protocol/types.js';
import { expandVariables } from '../../pipeline/variables-expand.js';
import type { BuildRecord, ProcessMode, Store } from './store.js';

/** GitLab's process modes, with the numbers its `Ci::ResourceGroup` stores them as. */
const MODE_NUMBERS: Record<ProcessMode, number> = { unordered: 0, oldest_first: 1, newest_first: 2, newest_ready_first: 3 };
export const PROCESS_MODES = Object.keys(MODE_NUMBERS) as ProcessMode[];

/** A job holds its group's resource in these states. */
const HOLDING = new Set<BuildStatus>(['pending', 'running']);
/** Jobs still to come, which the ordered modes count as in line. */
const UPCOMING = new Set<BuildStatus>(['created', 'scheduled']);

/** `resource_group:` of `build` with its variables expanded; undefined when it has none. */
export function resourceGroupName(store: Store, build: BuildRecord): string | undefined {
  const group = build.job.resourceGroup;
  if (group === undefined) return undefined;
  const pipeline = store.pipelines.get(build.pipelineId);
  const scope: Record<string, string> = { ...Object.fromEntries(build.job.variables.map((v) => [v.key, v.value])), ...(pipeline?.variables ?? {}) };
  if (build.job.environment) scope.CI_ENVIRONMENT_NAME = expandVariables(build.job.environment.name, scope);
  if (pipeline) Object.assign(scope, { CI_COMMIT_REF_NAME: pipeline.ref, CI_COMMIT_SHA: pipeline.sha, CI_PIPELINE_ID: String(pipeline.id) });
  return expandVariables(group, scope);
}

/** The group's key across the server: its project and expanded name. */
export function resourceKey(store: Store, build: BuildRecord): string | undefined {
  const name = resourceGroupName(store, build);
  return name === undefined ? undefined : `${build.projectId}\0${name}`;
}

/** The state a build takes when its turn comes: `pending`, or `waiting_for_resource` in a resource group. */
export function queuedStatus(build: BuildRecord): 'pending' | 'waiting_for_resource' {
  return build.job.resourceGroup === undefined ? 'pending' : 'waiting_for_resource';
}

/** The group's process mode, as set over the admin API; `unordered` when never set. */
export function processMode(store: Store, projectId: number, name: string): ProcessMode {
  return store.projects.get(projectId)?.resourceGroups?.[name]?.processMode ?? 'unordered';
}

/** The build the resource would go to next (it gets it only if it is waiting), per `mode`. */
function nextInLine(builds: readonly BuildRecord[], mode: ProcessMode): BuildRecord | undefined {
  const waiting = (build: BuildRecord): number => (build.status === 'waiting_for_resource' ? 0 : 1);
  const byPipeline = (direction: 1 | -1) => (a: BuildRecord, b: BuildRecord) => direction * (a.pipelineId - b.pipelineId) || waiting(a) - waiting(b) || a.id - b.id;
  switch (mode) {
    case 'unordered':
      return builds.filter((build) => build.status === 'waiting_for_resource').sort((a, b) => a.id - b.id)[0];
    case 'oldest_first':
      return [...builds].sort(byPipeline(1))[0];
    case 'newest_first':
      return [...builds].sort(byPipeline(-1))[0];
    case 'newest_ready_first':
      return builds.filter((build) => build.status === 'waiting_for_resource').sort(byPipeline(-1))[0];
  }
}

/**
 * Gives every free resource to the job next in line when that job is waiting, which becomes
 * `pending`; returns those jobs. Call whenever a job starts waiting, ends, or is canceled.
 */
export function assignResources(store: Store, now = Date.now()): BuildRecord[] {
  const groups = new Map<string, { projectId: number; name: string; builds: BuildRecord[]; held: boolean; waiting: boolean }>();
  for (const build of store.builds.values()) {
    if (build.job.resourceGroup === undefined || build.retried === true) continue;
    if (!HOLDING.has(build.status) && !UPCOMING.has(build.status) && build.status !== 'waiting_for_resource') continue;
    const name = resourceGroupName(store, build) ?? '';
    const key = `${build.projectId}\0${name}`;
    const group = groups.get(key) ?? { projectId: build.projectId, name, builds: [], held: false, waiting: false };
    groups.set(key, group);
    group.builds.push(build);
    group.held ||= HOLDING.has(build.status);
    group.waiting ||= build.status === 'waiting_for_resource';
  }
  const assigned: BuildRecord[] = [];
  for (const group of groups.values()) {
    if (group.held || !group.waiting) continue;
    const next = nextInLine(group.builds, processMode(store, group.projectId, group.name));
    if (next?.status !== 'waiting_for_resource') continue;
    store.changeBuild(next, (build) => {
      build.status = 'pending';
      build.lastActivityAt = now;
    });
    assigned.push(next);
  }
  return assigned;
}

/** The builds of a group, as GitLab's `upcoming_jobs` lists them: those in line for its resource, next first. */
export function upcomingBuilds(store: Store, projectId: number, name: string): BuildRecord[] {
  const mode = processMode(store, projectId, name);
  const inGroup = [...store.builds.values()].filter(
    (build) => build.projectId === projectId && build.retried !== true && build.job.resourceGroup !== undefined && resourceGroupName(store, build) === name,
  );
  const line = inGroup.filter((build) => build.status === 'waiting_for_resource' || (mode !== 'unordered' && mode !== 'newest_ready_first' && UPCOMING.has(build.status)));
  const ordered: BuildRecord[] = [];
  for (let next = nextInLine(line, mode); next !== undefined; next = nextInLine(line, mode)) {
    ordered.push(next);
    line.splice(line.indexOf(next), 1);
  }
  return ordered;
}
