/**
 * Local concurrency ids (docs/protocol-v1.md §10.7): each running job of a runner token and project gets the
 * lowest slot number not in use, so a later job of the same project reuses a finished one's build
 * dir (and a `fetch` there is cheap), while two concurrent jobs never share a checkout.
 */
export class SlotAllocator {
  private readonly used = new Map<string, Set<number>>();

  /** Takes the lowest free slot for `(runnerToken, projectId)`; call the returned release when done. */
  acquire(runnerToken: string, projectId: number): { slot: number; release: () => void } {
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
    let released = false;
    return {
      slot,
      release: () => {
        if (released) return;
        released = true;
        owned.delete(slot);
        if (owned.size === 0) this.used.delete(key);
      },
    };
  }
}
