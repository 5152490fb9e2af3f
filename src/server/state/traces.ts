/**
 * Build traces on disk (docs/protocol-v1.md §7.7): one file per build under `<dataDir>/traces`. E6 appends
 * after checking its start offset against the stored length; E5 with `trace` replaces the file. Both
 * mask secrets first without changing lengths (§7.8). Per-build operations are serialised so the
 * length check and the write cannot interleave with another request for the same build.
 */
import { createReadStream } from 'node:fs';
import { appendFile, mkdir, open, readFile, rename } from 'node:fs/promises';
import { crc32 } from 'node:zlib';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from './private-files.js';
import type { BuildRecord } from './store.js';
import { KeyedLock } from './keyed-lock.js';

/** GitLab's default `ci_jobs_trace_size_limit` (API v4): a job whose log grows past it is failed. */
export const MAX_TRACE_BYTES = 100 * 1024 * 1024;
/**
 * API v1's: GitLab 8.x had no limit and its runners' logs may be larger than v4's limit; this one only
 * keeps a build's token (which its job has, `CI_BUILD_TOKEN`) from filling the server's disk.
 */
export const MAX_TRACE_BYTES_V1 = 1024 * 1024 * 1024;

/** Replaces every occurrence of each secret with as many `x` bytes; lengths never change. */
export function maskSecrets(bytes: Buffer, secrets: readonly string[]): Buffer {
  let out = bytes;
  for (const secret of secrets) {
    if (secret.length < 4) continue;
    const needle = Buffer.from(secret, 'utf8');
    let at = out.indexOf(needle);
    while (at >= 0) {
      if (out === bytes) out = Buffer.from(bytes); // copy on first write; the caller's buffer stays intact
      out.fill(0x78, at, at + needle.byteLength);
      at = out.indexOf(needle, at + needle.byteLength);
    }
  }
  return out;
}

export type AppendResult = { ok: true; length: number } | { ok: false; length: number };

export class TraceStore {
  private readonly lock = new KeyedLock();
  private ready: Promise<unknown> | undefined;
  private readonly watchers = new Set<(buildId: number) => void>();
  /** CRC-32 of the bytes each build's runner sent (before masking), while it is known from the first byte. */
  private readonly received = new Map<number, number>();

  constructor(private readonly dir: string) {}

  private path(buildId: number): string {
    return join(this.dir, `${buildId}.log`);
  }

  /** Where the build's trace lives (it may not exist yet), for readers that stream ranges of it. */
  filePath(buildId: number): string {
    return this.path(buildId);
  }

  /** Calls `watcher` with the build id after every append or replace, until the returned function is called. */
  watch(watcher: (buildId: number) => void): () => void {
    this.watchers.add(watcher);
    return () => this.watchers.delete(watcher);
  }

  private changed(buildId: number): void {
    for (const watcher of [...this.watchers]) watcher(buildId);
  }

  private ensureDir(): Promise<unknown> {
    this.ready ??= mkdir(this.dir, { recursive: true, mode: PRIVATE_DIR_MODE });
    return this.ready;
  }

  /** Appends `bytes` when `start` equals the stored length; otherwise reports the stored length. */
  append(build: BuildRecord, start: number, bytes: Buffer, secrets: readonly string[]): Promise<AppendResult> {
    return this.lock.run(build.id, async () => {
      if (start !== build.traceSize) return { ok: false, length: build.traceSize };
      if (bytes.byteLength > 0) {
        await this.ensureDir();
        await appendFile(this.path(build.id), maskSecrets(bytes, secrets), { mode: PRIVATE_FILE_MODE });
        const before = start === 0 ? 0 : this.received.get(build.id);
        if (before === undefined) this.received.delete(build.id);
        else this.received.set(build.id, crc32(bytes, before));
        build.traceSize += bytes.byteLength;
        this.changed(build.id);
      }
      return { ok: true, length: build.traceSize };
    });
  }

  /**
   * Replaces the whole trace: written to a temp file, synced and renamed over the old one, so a crash
   * mid-write leaves the old trace or the new one, never a cut one.
   */
  replace(build: BuildRecord, bytes: Buffer, secrets: readonly string[]): Promise<void> {
    return this.lock.run(build.id, async () => {
      await this.ensureDir();
      const path = this.path(build.id);
      const temp = `${path}.tmp`;
      const file = await open(temp, 'w', PRIVATE_FILE_MODE);
      try {
        await file.writeFile(maskSecrets(bytes, secrets));
        await file.sync();
      } finally {
        await file.close();
      }
      await rename(temp, path);
      this.received.set(build.id, crc32(bytes));
      build.traceSize = bytes.byteLength;
      this.changed(build.id);
    });
  }

  /**
   * `crc32:<8 hex>` of every byte the build's runner sent, as API v4's final update states it (the
   * stored bytes differ where secrets were masked). Undefined when not known: nothing sent yet with
   * the server up since the first byte (a restart forgets it).
   */
  receivedChecksum(buildId: number, size: number): string | undefined {
    const crc = size === 0 ? 0 : this.received.get(buildId);
    return crc === undefined ? undefined : `crc32:${crc.toString(16).padStart(8, '0')}`;
  }

  /** The stored bytes, exactly. */
  read(buildId: number): Promise<Buffer> {
    return this.lock.run(buildId, async () => {
      try {
        return await readFile(this.path(buildId));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return Buffer.alloc(0);
        throw error;
      }
    });
  }

  /**
   * Calls `onLine` for every line of the stored trace, streaming (memory stays bounded whatever the
   * trace's size). A missing trace has no lines.
   */
  eachLine(buildId: number, onLine: (line: string) => void, signal?: AbortSignal): Promise<void> {
    return this.lock.run(buildId, async () => {
      const stream = createReadStream(this.path(buildId), { encoding: 'utf8', ...(signal ? { signal } : {}) });
      try {
        for await (const line of createInterface({ input: stream, crlfDelay: Infinity })) onLine(line);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      } finally {
        stream.destroy();
      }
    });
  }
}
