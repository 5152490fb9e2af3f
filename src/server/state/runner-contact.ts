/**
 * What a runner tells about itself on each call (both APIs): the time of contact, the stored subset
 * of `info`, and for API v4 the host it runs on (`system_id`, a runner manager) and the features it
 * announced, which decide which jobs it may take (`runner-features.ts`).
 */
import type { BuildRecord, RunnerApi, RunnerManager, RunnerRecord, Store } from './store.js';

/**
 * The `info` fields stored, with the longest value each may have: GitLab's (`Ci::RunnerManager`
 * validates version ≤ 2048, revision, platform and architecture ≤ 255 characters); name, executor
 * and shell, which GitLab keeps otherwise, get 255 here.
 */
const INFO_LIMITS: Readonly<Record<string, number>> = { name: 255, version: 2048, revision: 255, platform: 255, architecture: 255, executor: 255, shell: 255 };
const INFO_KEYS = Object.keys(INFO_LIMITS);
/** GitLab's limit on a runner manager's `system_xid`. */
export const SYSTEM_ID_LIMIT = 64;
/**
 * Managers kept per runner. GitLab keeps any number and deletes those unheard of for 7 days; here a
 * new one past this many takes the place of the one heard from longest ago, so a runner token cannot
 * make the server store without bound, and a fleet of this size whose hosts come and go never churns.
 */
export const MAX_MANAGERS = 200;

/** The stored subset of `info`: its string fields (docs/protocol-v1.md §4.10, docs/protocol-v4.md §3). */
export function parseInfo(value: unknown): Record<string, string> {
  if (!isObject(value)) return {};
  const info: Record<string, string> = {};
  for (const key of INFO_KEYS) {
    const field = value[key];
    if (typeof field === 'string' && field !== '') info[key] = field;
  }
  return info;
}

/**
 * Why a runner's `info` or `system_id` would not be stored (a field over its length limit), or
 * undefined: the caller answers 400 and records nothing of the request.
 */
export function contactProblem(info: unknown, systemId: string | undefined): string | undefined {
  if (systemId !== undefined && systemId.length > SYSTEM_ID_LIMIT) return `system_id is too long (at most ${SYSTEM_ID_LIMIT} characters)`;
  if (!isObject(info)) return undefined;
  for (const [key, limit] of Object.entries(INFO_LIMITS)) {
    const value = info[key];
    if (typeof value === 'string' && value.length > limit) return `info.${key} is too long (at most ${limit} characters)`;
  }
  return undefined;
}

/** `info.features` as booleans (anything but `true` is false); undefined when absent. */
export function parseFeatures(info: unknown): Record<string, boolean> | undefined {
  if (!isObject(info) || !isObject(info.features)) return undefined;
  return Object.fromEntries(Object.entries(info.features).map(([key, value]) => [key, value === true]));
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

export interface Contact {
  /** The request's `info`, as sent. */
  info?: unknown;
  /** v4 `system_id`: the host the call came from. */
  systemId?: string | undefined;
  /** Given on job requests: the API the runner takes jobs through, and so which of its features count. */
  api?: RunnerApi;
}

/**
 * Notes a runner's call: contact time (in memory), a change of `info` or a new manager (recorded),
 * and on job requests the API and features. When those change, the runner's queue value is dropped
 * so that its next request searches the queue again rather than short-circuit on `last_update`.
 */
export function noteContact(store: Store, runner: RunnerRecord, contact: Contact): void {
  const now = new Date();
  runner.contactedAt = now;
  const info = parseInfo(contact.info);
  let changed = false;
  if (Object.keys(info).length > 0 && !same(info, runner.info)) {
    runner.info = info;
    changed = true;
  }
  if (contact.systemId !== undefined) changed = noteManager(runner, contact.systemId, info, now) || changed;
  if (contact.api !== undefined) {
    const features = parseFeatures(contact.info) ?? runner.features;
    if (runner.api !== contact.api || !same(features, runner.features)) {
      runner.api = contact.api;
      if (features) runner.features = features;
      runner.queueValue = undefined;
    }
  }
  if (changed) store.saveRunner(runner);
}

/** Finds or adds the manager `systemId`; true when that changed what is recorded. */
function noteManager(runner: RunnerRecord, systemId: string, info: Record<string, string>, now: Date): boolean {
  const managers = (runner.managers ??= []);
  const existing = managers.find((manager) => manager.systemId === systemId);
  if (!existing) {
    if (managers.length >= MAX_MANAGERS) managers.splice(longestUnheard(managers), 1);
    const manager: RunnerManager = { systemId, info, contactedAt: now };
    managers.push(manager);
    return true;
  }
  existing.contactedAt = now;
  if (Object.keys(info).length === 0 || same(info, existing.info)) return false;
  existing.info = info;
  return true;
}

/** The index of the manager heard from longest ago (one not heard from since the server started first). */
function longestUnheard(managers: readonly RunnerManager[]): number {
  let oldest = 0;
  const time = (manager: RunnerManager): number => manager.contactedAt?.getTime() ?? -Infinity;
  managers.forEach((manager, index) => {
    if (time(manager) < time(managers[oldest]!)) oldest = index;
  });
  return oldest;
}

/**
 * A job update's sign of life (API v4 `PUT /jobs/:id`, with the job's token): the contact time of the
 * job's runner and of the manager that took the job, as GitLab's job heartbeat — nothing the request
 * says of itself (`info`, `system_id`) is the job token's to change.
 */
export function noteJobContact(store: Store, build: BuildRecord): void {
  const runner = build.runnerId === null ? undefined : store.runners.get(build.runnerId);
  if (!runner) return;
  const now = new Date();
  runner.contactedAt = now;
  const manager = build.managerSystemId === undefined ? undefined : runner.managers?.find((candidate) => candidate.systemId === build.managerSystemId);
  if (manager) manager.contactedAt = now;
}

/** Removes the manager `systemId`; false when the runner has none by that id. */
export function removeManager(store: Store, runner: RunnerRecord, systemId: string): boolean {
  const index = runner.managers?.findIndex((manager) => manager.systemId === systemId) ?? -1;
  if (index < 0 || !runner.managers) return false;
  runner.managers.splice(index, 1);
  store.saveRunner(runner);
  return true;
}
