/** Serialises async work per key (one build's trace file must see one writer at a time). */
export class KeyedLock {
  private readonly tails = new Map<string | number, Promise<unknown>>();

  /** Runs `fn` after every earlier call with the same key has settled. */
  run<T>(key: string | number, fn: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const next = previous.then(fn, fn);
    const tail = next.catch(() => undefined);
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return next;
  }
}
