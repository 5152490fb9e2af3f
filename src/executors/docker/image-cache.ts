/**
 * What `docker image inspect` said about an image, kept for the daemon's life so a burst of jobs on
 * one image asks the engine once instead of once per job (the executor is the job's; this outlives
 * it). Keyed by engine (CLI + DOCKER_HOST) and image name. An entry is replaced by a pull of that
 * image (its ID may have changed), dropped when a container of the image could not start (docker's
 * exit 125: the image may be gone), and trusted for at most `maxAgeMs`, so an image rebuilt under
 * the same tag outside the runner is seen within that time.
 */

/** A present image: its ID and what the build stages need from its config, from one `docker image inspect`. */
export interface LocalImage {
  id: string;
  /** Its USER ('' when unset). */
  user: string;
  /** Its ENTRYPOINT ([] when unset). */
  entrypoint: string[];
}

/** How long an inspect stays good: the jobs of one pipeline share it; a rebuilt tag is seen soon after. */
export const IMAGE_CACHE_MAX_AGE_MS = 60_000;

export class ImageCache {
  private readonly entries = new Map<string, { image: LocalImage; at: number }>();

  constructor(private readonly maxAgeMs = IMAGE_CACHE_MAX_AGE_MS) {}

  /** The entry of `image` on `engine`, when there is a fresh one. */
  get(engine: string, image: string): LocalImage | undefined {
    const entry = this.entries.get(key(engine, image));
    return entry && !this.expired(entry.at, performance.now()) ? entry.image : undefined;
  }

  /** Keeps `found`; entries past their age go at the same time, so a long-lived daemon keeps only fresh ones. */
  set(engine: string, image: string, found: LocalImage): void {
    const now = performance.now();
    for (const [k, entry] of this.entries) if (this.expired(entry.at, now)) this.entries.delete(k);
    this.entries.set(key(engine, image), { image: found, at: now });
  }

  forget(engine: string, image: string): void {
    this.entries.delete(key(engine, image));
  }

  private expired(at: number, now: number): boolean {
    return now - at > this.maxAgeMs;
  }
}

function key(engine: string, image: string): string {
  return `${engine}\u0000${image}`;
}
