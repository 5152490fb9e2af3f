/**
 * Whether each runner entry can take jobs now, for `/readyz`: its executor works and its last job
 * request was answered (204/201/409). A reason says what stands in the way otherwise.
 */
export interface EntryState {
  name: string;
  /** Undefined while the first executor check runs. */
  executorOk: boolean | undefined;
  executorReason: string | undefined;
  /** HTTP status of the last job request; -1 for no answer; undefined before the first. */
  lastStatus: number | undefined;
  failures: number;
}

export interface RunnerReadiness {
  runner: string;
  ready: boolean;
  reason?: string;
}

export function entryReadiness(entry: EntryState): RunnerReadiness {
  const runner = entry.name;
  if (entry.executorOk === undefined) return { runner, ready: false, reason: 'checking whether its executor works' };
  if (!entry.executorOk) return { runner, ready: false, reason: `its executor cannot run jobs: ${entry.executorReason ?? 'unknown'}` };
  if (entry.lastStatus === undefined) return { runner, ready: false, reason: 'no answer to its first job request yet' };
  if (entry.failures > 0) {
    const what = entry.lastStatus === 403 ? 'the coordinator refused its token (403): deleted or revoked?' : entry.lastStatus === -1 ? 'the coordinator does not answer' : `job requests fail with status ${entry.lastStatus}`;
    return { runner, ready: false, reason: `${what} (${entry.failures} in a row)` };
  }
  return { runner, ready: true };
}
