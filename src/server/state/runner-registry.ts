/**
 * Creating runners, the one path of every way a runner comes to be: a registration token over
 * either API (the instance's token makes a shared runner, a project's runners token a runner of that
 * project), or the admin API and the web page (a `glrt-` token, shown once).
 */
import type { ServerContext } from '../context.js';
import type { RunnerAccessLevel, RunnerRecord, RunnerRegistration } from './store.js';

/** The scope a registration token grants: the instance (shared runner) or one project; undefined when the token is unknown. */
export function registrationScope(ctx: ServerContext, token: string): { projectId: number | null } | undefined {
  if (token === ctx.settings.registrationToken) return { projectId: null };
  const project = ctx.store.projectByRunnersToken(token);
  return project ? { projectId: project.id } : undefined;
}

export interface NewRunner {
  registration: RunnerRegistration;
  description: string;
  tags: string[];
  runUntagged: boolean;
  locked: boolean;
  projectId: number | null;
  info?: Record<string, string>;
  active?: boolean;
  accessLevel?: RunnerAccessLevel;
  maximumTimeout?: number;
  maintenanceNote?: string;
}

/** GitLab refuses a job timeout cap under ten minutes. */
export const MIN_MAXIMUM_TIMEOUT = 600;

/** Why GitLab would refuse these settings, or undefined when they are fine. */
export function runnerSettingsProblem(fields: Pick<NewRunner, 'tags' | 'runUntagged' | 'maximumTimeout'>): string | undefined {
  if (fields.tags.length === 0 && !fields.runUntagged) return 'tags list can not be empty when runner is not allowed to pick untagged jobs (run_untagged)';
  if (fields.maximumTimeout !== undefined && (!Number.isInteger(fields.maximumTimeout) || fields.maximumTimeout < MIN_MAXIMUM_TIMEOUT)) {
    return `maximum_timeout must be a whole number of seconds, at least ${MIN_MAXIMUM_TIMEOUT}`;
  }
  return undefined;
}

/** Records a new runner with a fresh token; pending jobs it can take are offered to it at once. */
/** When a token issued now expires (ISO 8601), or undefined when tokens do not expire. */
export function tokenExpiry(ctx: ServerContext, now = Date.now()): string | undefined {
  const ms = ctx.settings.runnerTokenExpiresInMs;
  return ms > 0 ? new Date(now + ms).toISOString() : undefined;
}

export function createRunner(ctx: ServerContext, fields: NewRunner): RunnerRecord {
  const { info, accessLevel, maximumTimeout, maintenanceNote, ...rest } = fields;
  const expiresAt = tokenExpiry(ctx);
  const runner = ctx.store.addRunner({
    ...rest,
    ...(expiresAt ? { tokenExpiresAt: expiresAt } : {}),
    info: info ?? {},
    ...(accessLevel && accessLevel !== 'not_protected' ? { accessLevel } : {}),
    ...(maximumTimeout !== undefined ? { maximumTimeout } : {}),
    ...(maintenanceNote ? { maintenanceNote } : {}),
  });
  ctx.logger.info({ runnerId: runner.id, registration: fields.registration, shared: fields.projectId === null, tags: fields.tags }, 'runner created');
  return runner;
}
