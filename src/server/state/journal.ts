/**
 * The data dir's state files (durable.ts): a snapshot, replaced atomically (temp file, fsync,
 * rename, fsync of the directory), and an append-only journal of the changes made since it. Each
 * journal record is framed as `length (u32 LE) | crc32 (u32 LE) | JSON`, written and fdatasync'ed
 * before the change is acknowledged to a client. A SIGKILL or a crash can only leave a torn last
 * record; the reader stops at the first record whose frame or checksum does not hold, keeps the
 * bytes it drops in a side file, and cuts the journal back to its last whole record.
 *
 * Files: `state.json` (snapshot with its `generation` g) and `journal-<g>.log` (changes after it).
 */
import { closeSync, existsSync, fchmodSync, fdatasyncSync, fsyncSync, openSync, readdirSync, readFileSync, renameSync, rmSync, truncateSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { CiRunnerError } from '../../util/errors.js';
import { PRIVATE_FILE_MODE } from './private-files.js';

const HEADER_BYTES = 8;
/** A record longer than this is a torn or corrupt length field, not a record. */
const MAX_RECORD_BYTES = 64 * 1024 * 1024;
const SNAPSHOT = 'state.json';

export function journalName(generation: number): string {
  return `journal-${generation}.log`;
}

/** One record's bytes: frame header, then the JSON text. */
export function encodeRecord(value: unknown): Buffer {
  const payload = Buffer.from(JSON.stringify(value), 'utf8');
  const header = Buffer.alloc(HEADER_BYTES);
  header.writeUInt32LE(payload.byteLength, 0);
  header.writeUInt32LE(crc32(payload), 4);
  return Buffer.concat([header, payload]);
}

export interface DecodedJournal {
  records: unknown[];
  /** Bytes of whole, valid records: where the journal is cut back to. */
  validBytes: number;
}

/** Decodes whole records up to the first torn or corrupt one. Pure. */
export function decodeRecords(bytes: Buffer): DecodedJournal {
  const records: unknown[] = [];
  let at = 0;
  while (at + HEADER_BYTES <= bytes.byteLength) {
    const length = bytes.readUInt32LE(at);
    const sum = bytes.readUInt32LE(at + 4);
    const end = at + HEADER_BYTES + length;
    if (length > MAX_RECORD_BYTES || end > bytes.byteLength) break;
    const payload = bytes.subarray(at + HEADER_BYTES, end);
    if (crc32(payload) !== sum) break;
    try {
      records.push(JSON.parse(payload.toString('utf8')));
    } catch {
      break;
    }
    at = end;
  }
  return { records, validBytes: at };
}

export interface LoadedState<S> {
  snapshot: S | undefined;
  records: unknown[];
  generation: number;
  /** Bytes dropped from a torn or corrupt journal tail (kept in `droppedTo`). */
  dropped: number;
  droppedTo?: string;
}

/** Opens a state directory; creates nothing. Throws `STATE_UNREADABLE` on a snapshot it cannot read. */
export function loadState<S extends { generation: number }>(dir: string): LoadedState<S> {
  let snapshot: S | undefined;
  const snapshotPath = join(dir, SNAPSHOT);
  if (existsSync(snapshotPath)) {
    try {
      snapshot = JSON.parse(readFileSync(snapshotPath, 'utf8')) as S;
    } catch (error) {
      // Written by rename only, so it is never torn: this is damage from outside. Refuse rather than
      // start empty and lose every runner and build.
      throw new CiRunnerError('STATE_UNREADABLE', `cannot read ${snapshotPath}: ${(error as Error).message}; restore it from a backup or move the data dir aside`, { cause: error });
    }
  }
  const generation = snapshot?.generation ?? 0;
  const journalPath = join(dir, journalName(generation));
  if (!existsSync(journalPath)) return { snapshot, records: [], generation, dropped: 0 };
  const bytes = readFileSync(journalPath);
  const { records, validBytes } = decodeRecords(bytes);
  const dropped = bytes.byteLength - validBytes;
  if (dropped === 0) return { snapshot, records, generation, dropped };
  const droppedTo = `${journalPath}.dropped-${Date.now()}`;
  writeFileSync(droppedTo, bytes.subarray(validBytes), { mode: PRIVATE_FILE_MODE });
  truncateSync(journalPath, validBytes);
  return { snapshot, records, generation, dropped, droppedTo };
}

function fsyncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Writes `bytes` to `path` so that a crash leaves either the old file or the new one, whole; the file
 * is the owner's alone (0600), whatever the umask or a temp file left by a crash.
 */
export function writeFileAtomic(path: string, bytes: Buffer | string): void {
  const temp = `${path}.tmp-${process.pid}`;
  const fd = openSync(temp, 'w', PRIVATE_FILE_MODE);
  try {
    fchmodSync(fd, PRIVATE_FILE_MODE);
    writeSync(fd, typeof bytes === 'string' ? Buffer.from(bytes, 'utf8') : bytes);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temp, path);
}

/** The journal being appended to. Synchronous, like the store it records: no change can interleave. */
export class Journal {
  private fd: number;
  private bytes = 0;

  private constructor(
    private readonly dir: string,
    private generation: number,
  ) {
    this.fd = openSync(join(dir, journalName(generation)), 'a', PRIVATE_FILE_MODE);
  }

  /**
   * Writes `snapshot` as generation `generation + 1` and starts its empty journal; older journals
   * are removed. Used at start and whenever the journal grows large.
   */
  static startAfter(dir: string, generation: number, snapshot: object): Journal {
    const next = generation + 1;
    writeFileAtomic(join(dir, journalName(next)), Buffer.alloc(0));
    writeFileAtomic(join(dir, SNAPSHOT), JSON.stringify({ ...snapshot, generation: next }));
    fsyncDir(dir);
    removeOldJournals(dir, next);
    return new Journal(dir, next);
  }

  get size(): number {
    return this.bytes;
  }

  /** Appends one record and waits for it to reach the disk. */
  append(value: unknown): void {
    const record = encodeRecord(value);
    writeSync(this.fd, record);
    fdatasyncSync(this.fd);
    this.bytes += record.byteLength;
  }

  /** Replaces snapshot and journal with `snapshot` (the current state). */
  compact(snapshot: object): void {
    const next = Journal.startAfter(this.dir, this.generation, snapshot);
    closeSync(this.fd);
    this.fd = next.fd;
    this.generation = next.generation;
    this.bytes = 0;
  }

  close(): void {
    closeSync(this.fd);
  }
}

function removeOldJournals(dir: string, keep: number): void {
  for (const name of readdirSync(dir)) {
    const match = /^journal-(\d+)\.log$/.exec(name);
    if (match && Number(match[1]) !== keep) rmSync(join(dir, name), { force: true });
  }
}
