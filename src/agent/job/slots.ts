/**
 * Local concurrency ids (docs/protocol-v1.md §10.7): each running job of a runner token and project gets the
 * lowest slot number not in use, so a later job of the same project reuses a finished one's build
 * dir (and a `fetch` there is cheap), while two concurrent jobs never share a checkout. That is GitLab
 * Runner's CI_CONCURRENT_PROJECT_ID; its CI_CONCURRENT_ID is the same over all the token's jobs
 * (`concurrentId`), given back as the job's slot is.
 *
 * A job gives its slot back as its final update goes out, with its executor's cleanup (the leftovers
 * in the slot's dirs) as the slot's: the next job of the same slot waits for that cleanup (`previous`).
 * What is left after that (the job's own state dir, once the server has its trace) is `track`ed.
 * `settled()` waits for both, so a stopping daemon ends after them.
 */
export class SlotAllocator {
  private readonly used = new Map<string, Set<number>>();
  /** CI_CONCURRENT_IDs in use, by runner token. */
  private readonly runnerIds = new Map<string, Set<number>>();
  /** Cleanups still running, by `key\0slot`. */
  private readonly cleanups = new Map<string, Promise<void>>();
  /** Work of ended jobs that no slot waits for (`track`). */
  private readonly background = new Set<Promise<void>>();

  /**
   * Takes the lowest free slot for `(runnerToken, projectId)`. `previous` settles once the cleanup of
   * the slot's last job has ended; `release` gives the slot back, with the cleanup still to run.
   */
  acquire(runnerToken: string, projectId: number): { slot: number; concurrentId: number; previous: Promise<void>; release: (cleanup?: Promise<void>) => void } {
    const key = `${runnerToken}\u0000${projectId}`;
    const owned = takeLowest(this.used, key);
    const slot = owned.taken;
    const ownedIds = takeLowest(this.runnerIds, runnerToken);
    const concurrentId = ownedIds.taken;
    const cleanupKey = `${key}\u0000${slot}`;
    const previous = this.cleanups.get(cleanupKey) ?? Promise.resolve();
    let released = false;
    return {
      slot,
      concurrentId,
      previous,
      release: (cleanup) => {
        if (released) return;
        released = true;
        if (cleanup) {
          // Never rejects: a cleanup reports its own failures; a later job must not fail by it.
          const tracked: Promise<void> = cleanup.catch(() => undefined).finally(() => {
            if (this.cleanups.get(cleanupKey) === tracked) this.cleanups.delete(cleanupKey);
          });
          this.cleanups.set(cleanupKey, tracked);
        }
        owned.give();
        ownedIds.give();
      },
    };
  }

  /** Work of an ended job that the next job of its slot need not wait for, but a stopping daemon must. */
  track(work: Promise<void>): void {
    const tracked: Promise<void> = work.catch(() => undefined).finally(() => this.background.delete(tracked));
    this.background.add(tracked);
  }

  /** Settles once every cleanup and tracked work started so far has ended. */
  async settled(): Promise<void> {
    while (this.cleanups.size > 0 || this.background.size > 0) await Promise.all([...this.cleanups.values(), ...this.background]);
  }
}

/** Takes the lowest number not in use under `key` in `sets`; `give` puts it back (and drops an empty set). */
function takeLowest(sets: Map<string, Set<number>>, key: string): { taken: number; give: () => void } {
  let set = sets.get(key);
  if (!set) {
    set = new Set();
    sets.set(key, set);
  }
  let taken = 0;
  while (set.has(taken)) taken += 1;
  set.add(taken);
  const owned = set;
  return {
    taken,
    give: () => {
      owned.delete(taken);
      if (owned.size === 0 && sets.get(key) === owned) sets.delete(key);
    },
  };
}
