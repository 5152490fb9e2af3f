/**
 * Picking a build for E4 (docs/protocol-v1.md §11.1), the `last_update` queue values (§4.4.1) and the
 * long-poll waiters. `pick` is synchronous: choosing and marking a build `running` happen in one
 * turn of the event loop, so two polls arriving together can never get the same build.
 */
import { queueValue } from '../tokens.js';
import { missingFeatures } from './runner-features.js';
import type { BuildRecord, RunnerRecord, Store } from './store.js';
import { setLongTimeout } from '../../util/timers.js';
import { resourceKey } from './resource-groups.js';

/**
 * May `runner` take `build`? Tags, `run_untagged`, project ownership of specific runners and a
 * `ref_protected` runner's protected refs (given `store` to look the pipeline up). The features a v4
 * runner announced are checked when it asks (`pick`): a job it cannot run is dropped then.
 */
export function canRun(runner: RunnerRecord, build: BuildRecord, store?: Store): boolean {
  // A trigger job is the server's to run (state/bridges.ts), never a runner's.
  if (build.job.trigger) return false;
  // A specific runner serves its own project only. `locked` means "never assign to other projects",
  // which with one project per specific runner changes nothing; shared runners are not locked to any.
  if (runner.projectId !== null && runner.projectId !== build.projectId) return false;
  if (!fitsTags(runner, build)) return false;
  return !(runner.accessLevel === 'ref_protected' && store && !onProtectedRef(store, build));
}

/** The runner has every tag of the job, or the job has none and the runner takes untagged jobs. */
export function fitsTags(runner: RunnerRecord, build: BuildRecord): boolean {
  const tags = build.job.tags;
  return tags.length === 0 ? runner.runUntagged : tags.every((tag) => runner.tags.includes(tag));
}

/**
 * Whether `build` runs for a protected ref. This server protects what GitLab protects by default:
 * the project's default branch (the branch its HEAD named when the pipeline was created).
 */
export function onProtectedRef(store: Store, build: BuildRecord): boolean {
  const pipeline = store.pipelines.get(build.pipelineId);
  return pipeline !== undefined && !pipeline.tag && pipeline.defaultBranch !== undefined && pipeline.ref === pipeline.defaultBranch;
}

export class Scheduler {
  private waiters = new Set<() => void>();

  constructor(private readonly store: Store) {}

  /** The runner's current queue value, minted if it has none. */
  currentQueueValue(runner: RunnerRecord): string {
    runner.queueValue ??= queueValue();
    return runner.queueValue;
  }

  /**
   * Call whenever a build becomes pending: ticks every runner's queue value (the simplest correct
   * rule of §4.4.1) and wakes every long poll.
   */
  buildsQueued(): void {
    for (const runner of this.store.runners.values()) runner.queueValue = queueValue();
    const waiters = this.waiters;
    this.waiters = new Set();
    for (const wake of waiters) wake();
  }

  /**
   * Chooses a pending build for `runner` and assigns it (pending → running), or returns undefined.
   * `assign` sets more of the build in the same recorded change (what the runner's API knows). A build
   * that needs a feature the runner did not announce is handed to `drop` (which fails it as
   * `runner_unsupported`, as GitLab does) and the search goes on.
   */
  pick(runner: RunnerRecord, assign?: (build: BuildRecord) => void, drop?: (build: BuildRecord, missing: string[]) => void): BuildRecord | undefined {
    const busy = this.busyResourceGroups();
    const candidates = [...this.store.builds.values()].filter(
      (build) => build.status === 'pending' && build.runnerId === null && canRun(runner, build, this.store) && !busy.has(resourceKey(this.store, build) ?? ''),
    );
    for (;;) {
      const chosen = this.best(runner, candidates);
      if (!chosen) return undefined;
      const missing = missingFeatures(runner, chosen);
      if (missing.length === 0) return this.assign(runner, chosen, assign);
      candidates.splice(candidates.indexOf(chosen), 1);
      drop?.(chosen, missing);
    }
  }

  /** The build `runner` gets first of `candidates`. */
  private best(runner: RunnerRecord, candidates: readonly BuildRecord[]): BuildRecord | undefined {
    if (candidates.length === 0) return undefined;
    let chosen: BuildRecord | undefined;
    if (runner.projectId !== null) {
      chosen = candidates.reduce((a, b) => (b.id < a.id ? b : a));
    } else {
      // Fair scheduling for shared runners: projects with the fewest builds running on shared
      // runners first, then the oldest build.
      const running = this.sharedRunningPerProject();
      chosen = candidates.reduce((a, b) => {
        const ra = running.get(a.projectId) ?? 0;
        const rb = running.get(b.projectId) ?? 0;
        if (rb !== ra) return rb < ra ? b : a;
        return b.id < a.id ? b : a;
      });
    }
    return chosen;
  }

  private assign(runner: RunnerRecord, chosen: BuildRecord, assign?: (build: BuildRecord) => void): BuildRecord {
    this.store.changeBuild(chosen, (build) => {
      build.status = 'running';
      build.runnerId = runner.id;
      build.startedAt = new Date();
      build.lastActivityAt = Date.now();
      assign?.(build);
    });
    return chosen;
  }

  /**
   * The resource groups (`resourceKey`) a running build holds. A pending build of a group has its
   * resource already (resource-groups.ts); this keeps the rule for a data dir written before jobs
   * waited as `waiting_for_resource`, whose pending builds had none.
   */
  private busyResourceGroups(): Set<string> {
    const busy = new Set<string>();
    for (const build of this.store.builds.values()) {
      const key = build.status === 'running' ? resourceKey(this.store, build) : undefined;
      if (key !== undefined) busy.add(key);
    }
    return busy;
  }

  private sharedRunningPerProject(): Map<number, number> {
    const counts = new Map<number, number>();
    for (const build of this.store.builds.values()) {
      if (build.status !== 'running' || build.runnerId === null) continue;
      if (this.store.runners.get(build.runnerId)?.projectId !== null) continue;
      counts.set(build.projectId, (counts.get(build.projectId) ?? 0) + 1);
    }
    return counts;
  }

  /**
   * Resolves when a build is queued, `ms` passes, or `signal` aborts — whichever comes first. Never
   * rejects; the caller re-checks state afterwards.
   */
  waitForWork(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      if (signal.aborted || ms <= 0) {
        resolve();
        return;
      }
      const done = (): void => {
        timer.clear();
        signal.removeEventListener('abort', done);
        this.waiters.delete(done);
        resolve();
      };
      const timer = setLongTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
      this.waiters.add(done);
    });
  }
}
