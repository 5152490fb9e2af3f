/**
 * The windowed reader under yauzl: the entries and contents of a zip read through it are exactly
 * the archive's, a content stream destroyed by its consumer leaves the file open for the entries
 * after it, and many small entries cost a few reads of the file, not several each.
 */
import { createWriteStream } from 'node:fs';
import { mkdtemp, open, rm, type FileHandle } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fromRandomAccessReader, type Entry, type ZipFile } from 'yauzl';
import { ZipFile as ZipWriter } from 'yazl';
import { WindowedZipReader } from '../../src/artifacts/zip-window.js';

const SMALL = 3000;
const big = randomBytes(1024 * 1024 + 17);
let dir: string;
let file: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'zip-window-'));
  file = join(dir, 'a.zip');
  const zip = new ZipWriter();
  for (let i = 0; i < SMALL / 2; i += 1) zip.addBuffer(Buffer.from(`small ${i}\n`), `first/${i}-${'x'.repeat(100)}`);
  zip.addBuffer(big, 'big.bin', { compress: false });
  for (let i = SMALL / 2; i < SMALL; i += 1) zip.addBuffer(Buffer.from(`small ${i}\n`), `second/${i}`, { compress: i % 2 === 0 });
  zip.end();
  await pipeline(zip.outputStream, createWriteStream(file));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

/** A file handle that counts its reads. */
async function countingHandle(path: string): Promise<{ handle: FileHandle; reads: () => number }> {
  const handle = await open(path, 'r');
  let reads = 0;
  const read = handle.read.bind(handle) as (...args: unknown[]) => ReturnType<FileHandle['read']>;
  (handle as { read: unknown }).read = (...args: unknown[]) => {
    reads += 1;
    return read(...args);
  };
  return { handle, reads: () => reads };
}

async function readAll(zip: ZipFile): Promise<Map<string, Buffer>> {
  const contents = new Map<string, Buffer>();
  for (;;) {
    const entry = await new Promise<Entry | undefined>((resolve, reject) => {
      zip.once('entry', resolve).once('end', () => resolve(undefined)).once('error', reject);
      zip.readEntry();
    });
    zip.removeAllListeners('entry').removeAllListeners('end').removeAllListeners('error');
    if (!entry) return contents;
    const stream = await zip.openReadStreamPromise(entry);
    const chunks: Buffer[] = [];
    // for await destroys the stream when done, as the extraction's writer does.
    for await (const chunk of stream) chunks.push(chunk as Buffer);
    contents.set(entry.fileName, Buffer.concat(chunks));
  }
}

describe('WindowedZipReader', () => {
  it('reads every entry and its content as written, in a few reads', async () => {
    const { handle, reads } = await countingHandle(file);
    const { size } = await handle.stat();
    const reader = new WindowedZipReader(handle, size);
    const zip = await new Promise<ZipFile>((resolve, reject) =>
      fromRandomAccessReader(reader, size, { lazyEntries: true, autoClose: false }, (error, opened) => (error ? reject(error) : resolve(opened))),
    );
    const contents = await readAll(zip);
    zip.close();
    expect(contents.size).toBe(SMALL + 1);
    expect(contents.get('big.bin')!.equals(big)).toBe(true);
    expect(contents.get('first/7-' + 'x'.repeat(100))!.toString()).toBe('small 7\n');
    expect(contents.get(`second/${SMALL - 1}`)!.toString()).toBe(`small ${SMALL - 1}\n`);
    // yauzl's own reader makes 5 reads per entry here (15,000); windows of 256 KiB need a few dozen.
    expect(reads()).toBeLessThan(100);
  });
});
