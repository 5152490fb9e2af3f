/**
 * The agent's state for one `[[runners]]` entry, matched across reloads by url+token, and what a
 * reload does to it: a changed entry restarts its pause and forgives its backoff and unhealthy
 * requests (GitLab Runner forgives those at any reload; an unchanged entry here keeps them); every reload makes
 * an entry waiting for its executor check again at once; a removed entry ends its loops.
 */
import type { RunnerApi } from '../client/api.js';
import type { RunnerConfig } from './config/schema.js';
import type { PollEntry } from './poll-once.js';

export interface RunnerEntry extends PollEntry {
  key: string;
  config: RunnerConfig;
  client: RunnerApi;
  running: number;
  polling: number;
  removed: boolean;
  /** Aborted by every reload, so an entry waiting for its executor checks again at once. */
  reloaded: AbortController;
  /** Aborted by a reload that changed the entry (or check_interval): ends its poll pause early. */
  changed: AbortController;
  /** Poll loops running; a reload raising or lowering `request_concurrency` adds or ends some. */
  loopCount: number;
  /** The executor check's last answer (undefined until the first). */
  executorOk?: boolean;
  executorReason?: string;
}

/** Entries are the same across reloads when url and token are. */
export function entryKey(runner: RunnerConfig): string {
  return `${runner.url}\u0000${runner.token}`;
}

/** A fresh entry; its `client` is set by the caller (the client may read the entry back). */
export function newEntry(runner: RunnerConfig): RunnerEntry {
  return { key: entryKey(runner), config: runner, running: 0, polling: 0, failures: 0, health: freshHealth(), removed: false, reloaded: new AbortController(), changed: new AbortController(), loopCount: 0 } as Omit<RunnerEntry, 'client'> as RunnerEntry;
}

function freshHealth(): RunnerEntry['health'] {
  return { failures: 0, lastCheck: Date.now() };
}

/** Gives a kept entry its reloaded config; `intervalChanged` when the reload changed check_interval. */
export function reconfigureEntry(entry: RunnerEntry, runner: RunnerConfig, intervalChanged: boolean): void {
  const changed = JSON.stringify(runner) !== JSON.stringify(entry.config);
  entry.config = runner;
  // An unchanged entry keeps its pause and its backoff: rewriting config.toml (register adding
  // another entry) must not make every other entry poll at once, nor forgive a refused token.
  if (changed || intervalChanged) {
    entry.failures = 0;
    entry.health = freshHealth();
    entry.changed.abort();
    entry.changed = new AbortController();
  }
  entry.reloaded.abort();
  entry.reloaded = new AbortController();
}

/** An entry the reload removed: its executor wait and poll loops end. */
export function retireEntry(entry: RunnerEntry): void {
  entry.removed = true;
  entry.reloaded.abort();
  entry.changed.abort();
}
