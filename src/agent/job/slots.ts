/**
 * Local concurrency ids (docs/protocol-v1.md §10.7): each running job of a runner token and project gets the
 * lowest slot number not in use, so a later job of the same project reuses a finished one's build
 * dir (and a `fetch` there is cheap), while two concurrent jobs never share a checkout.
 *
 * A job gives its slot back as soon as its final update is sent and cleans up afterwards (its
 * executor's leftovers, its state dir): the next job of the same slot waits for that cleanup
 * (`previous`), and `settled()` for every one still running, so a stopping daemon ends after them.
 */
export class SlotAllocator {
  private readonly used = new Map<string, Set<number>>();
  /** Cleanups still running, by `key\0slot`. */
  private readonly cleanups = new Map<string, Promise<void>>();

  /**
   * Takes the lowest free slot for `(runnerToken, projectId)`. `previous` settles once the cleanup of
   * the slot's last job has ended; `release` gives the slot back, with the cleanup still to run.
   */
  acquire(runnerToken: string, projectId: number): { slot: number; previous: Promise<void>; release: (cleanup?: Promise<void>) => void } {
    const key = `${runnerToken}\u0000${projectId}`;
    let set = this.used.get(key);
    if (!set) {
      set = new Set();
      this.used.set(key, set);
    }
    let slot = 0;
    while (set.has(slot)) slot += 1;
    set.add(slot);
    const owned = set;
    const cleanupKey = `${key}\u0000${slot}`;
    const previous = this.cleanups.get(cleanupKey) ?? Promise.resolve();
    let released = false;
    return {
      slot,
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
        owned.delete(slot);
        if (owned.size === 0) this.used.delete(key);
      },
    };
  }

  /** Settles once every cleanup started so far has ended. */
  async settled(): Promise<void> {
    while (this.cleanups.size > 0) await Promise.all(this.cleanups.values());
  }
}
