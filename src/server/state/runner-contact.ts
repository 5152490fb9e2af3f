/**
 * What a runner tells about itself on each call (both APIs): the time of contact, the stored subset
 * of `info`, and for API v4 the host it runs on (`system_id`, a runner manager) and the features it
 * announced, which decide which jobs it may take (`runner-features.ts`).
 */
import type { Store } from './store.js';
import type { RunnerApi, RunnerManager, RunnerRecord } from './store.js';

const INFO_KEYS = ['name', 'version', 'revision', 'platform', 'architecture', 'executor', 'shell'];

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
    const manager: RunnerManager = { systemId, info, contactedAt: now };
    managers.push(manager);
    return true;
  }
  existing.contactedAt = now;
  if (Object.keys(info).length === 0 || same(info, existing.info)) return false;
  existing.info = info;
  return true;
}

/** Removes the manager `systemId`; false when the runner has none by that id. */
export function removeManager(store: Store, runner: RunnerRecord, systemId: string): boolean {
  const index = runner.managers?.findIndex((manager) => manager.systemId === systemId) ?? -1;
  if (index < 0 || !runner.managers) return false;
  runner.managers.splice(index, 1);
  store.saveRunner(runner);
  return true;
}
