/**
 * The namespaces other than `[runners.kubernetes] namespace` that this runner entry's jobs used (one a
 * job chose, KUBERNETES_NAMESPACE_OVERWRITE under `namespace_overwrite_allowed`, or its own with
 * `namespace_per_job`), so the start-up sweep (leftovers.ts) looks there too for what a killed process
 * left. A file beside the entry's builds (survives a restart of the process, and of its container in a
 * runner pod: an emptyDir outlives it), one name a line, at most {@link MAX_RECORDED} (the least
 * recently used dropped first). Only names Kubernetes accepts go in or come out.
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { shortToken } from '../../util/short-token.js';

export const MAX_RECORDED = 64;
/** A namespace name (RFC 1123 label). */
const NAMESPACE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** The record's file for a runner entry. */
export function namespaceRecordFile(buildsDir: string, runnerToken: string): string {
  return join(buildsDir, `.ci-runner-kubernetes-namespaces-${shortToken(runnerToken).replace(/[^A-Za-z0-9_-]/g, '_')}`);
}

export class NamespaceRecord {
  /** Writes one after the other (jobs of one process prepare at once). */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(readonly file: string) {}

  /** The recorded namespaces, most recently used last; none when the file is missing or unreadable. */
  async read(): Promise<string[]> {
    const text = await readFile(this.file, 'utf8').catch(() => '');
    return [...new Set(text.split('\n').filter((name) => NAMESPACE.test(name)))].slice(-MAX_RECORDED);
  }

  /** Adds (or moves to the end) `namespace`. */
  add(namespace: string): Promise<void> {
    if (!NAMESPACE.test(namespace)) return Promise.resolve();
    return this.update(async (names) => [...names.filter((n) => n !== namespace), namespace]);
  }

  /** Keeps only the names `keep` says. */
  retain(keep: (namespace: string) => boolean): Promise<void> {
    return this.update(async (names) => names.filter(keep));
  }

  private update(change: (names: string[]) => Promise<string[]>): Promise<void> {
    const next = this.queue.then(async () => {
      const names = (await change(await this.read())).slice(-MAX_RECORDED);
      const temporary = `${this.file}.${process.pid}.tmp`;
      await mkdir(dirname(this.file), { recursive: true });
      await writeFile(temporary, names.length > 0 ? `${names.join('\n')}\n` : '', { mode: 0o600 });
      await rename(temporary, this.file);
    });
    this.queue = next.catch(() => undefined);
    return next;
  }
}
