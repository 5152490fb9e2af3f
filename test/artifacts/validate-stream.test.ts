/** The validation pass run on an archive's bytes as they arrive (the download's tee). */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, realpath, symlink, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ArtifactsError, extractArchive } from '../../src/artifacts/index.js';
import { StreamValidator } from '../../src/artifacts/validate-stream.js';
import { rawTar, rawTarGz, rawZip, removeTempDirs, tempDir } from './fixtures.js';

let project: string;
let root: string;
const signal = new AbortController().signal;

beforeEach(async () => {
  project = join(await tempDir(), 'project');
  await mkdir(project);
  root = await realpath(project);
});
afterEach(removeTempDirs);

function validator(): StreamValidator {
  return new StreamValidator({ root, lexicalRoot: resolve(project), file: join(project, '..', 'archive') });
}

function pieces(bytes: Buffer, size: number): Buffer[] {
  const out: Buffer[] = [];
  for (let offset = 0; offset < bytes.length; offset += size) out.push(bytes.subarray(offset, offset + size));
  return out;
}

/** Feeds `chunks` until one throws; returns how many were taken and the error. */
function feed(v: StreamValidator, chunks: Buffer[]): { fed: number; error: unknown } {
  for (let i = 0; i < chunks.length; i += 1) {
    try {
      v.write(chunks[i] as Buffer);
    } catch (error) {
      return { fed: i + 1, error };
    }
  }
  return { fed: chunks.length, error: undefined };
}

const harmless = [
  { name: 'dir', type: '5' },
  { name: 'dir/a.txt', type: '0', content: 'a' },
  { name: 'dir/link', type: '2', linkname: 'a.txt' },
];

describe('StreamValidator', () => {
  it.each([1, 7, 512, 65536])('accepts a harmless tar.gz fed in %i-byte pieces, and extractArchive takes its proof', async (size) => {
    const bytes = rawTarGz(harmless);
    const v = validator();
    expect(feed(v, pieces(bytes, size)).error).toBeUndefined();
    const validated = await v.finish();
    const file = join(project, '..', 'archive');
    expect(validated).toEqual({ file, format: 'tar.gz', root });
    await writeFile(file, bytes);
    const summary = await extractArchive(file, project, signal, validated ? { validated } : {});
    expect(summary.entries).toBe(3);
    expect(await readFile(join(project, 'dir/link'), 'utf8')).toBe('a');
  });

  it('validates an archive shorter than the format sniff (one small chunk)', async () => {
    const bytes = rawTarGz([{ name: 'a.txt', type: '0', content: 'a' }]);
    expect(bytes.length).toBeLessThan(512);
    const v = validator();
    v.write(bytes);
    expect(await v.finish()).toEqual({ file: join(project, '..', 'archive'), format: 'tar.gz', root });
  });

  it('throws ARCHIVE_UNSAFE as soon as the unsafe entry arrives, before the rest of the archive', async () => {
    const bytes = rawTar([
      { name: 'first.txt', type: '0', content: 'harmless' },
      { name: '../outside.txt', type: '0', content: 'pwned' },
      { name: 'big.bin', type: '0', content: randomBytes(1_000_000) },
    ]);
    const chunks = pieces(bytes, 4096);
    const v = validator();
    const { fed, error } = feed(v, chunks);
    expect(error).toBeInstanceOf(ArtifactsError);
    expect((error as ArtifactsError).code).toBe('ARCHIVE_UNSAFE');
    expect((error as Error).message).toMatch(/"\.\." component/);
    expect(fed).toBeLessThan(chunks.length / 2);
    // The failure sticks: more bytes and finish() report it again.
    expect(() => v.write(Buffer.alloc(512))).toThrow(/"\.\." component/);
    await expect(v.finish()).rejects.toThrow(/"\.\." component/);
  });

  it('accepts every entry as it arrives, then refuses at the end a link of the project dir the archive re-aims out', async () => {
    // w -> a/.. is the project root while a is a directory; the archive makes a a link to "."
    await mkdir(join(project, 'a'));
    await symlink('a/..', join(project, 'w'));
    const v = validator();
    expect(feed(v, pieces(rawTarGz([{ name: 'w/through.txt', type: '0', content: 'x' }, { name: 'a', type: '2', linkname: '.' }]), 100)).error).toBeUndefined();
    await expect(v.finish()).rejects.toThrow(/the symlink w -> a\/\.\. already in the project dir would, once the archive is extracted, lead outside the project dir/);
  });

  it('reports a gzip stream that does not inflate as ARCHIVE_CORRUPT', async () => {
    const v = validator();
    const garbage = Buffer.concat([Buffer.from([0x1f, 0x8b, 0x08, 0x00]), randomBytes(4000)]);
    const { error } = feed(v, [garbage]);
    const failure = error ?? (await v.finish().then(() => undefined, (caught: unknown) => caught));
    expect(failure).toBeInstanceOf(ArtifactsError);
    expect((failure as ArtifactsError).code).toBe('ARCHIVE_CORRUPT');
  });

  it('leaves a zip to extractArchive (no proof)', async () => {
    const v = validator();
    v.write(rawZip([{ name: 'a.txt', content: 'a' }]));
    expect(await v.finish()).toBeUndefined();
  });
});

describe('extractArchive with a proof', () => {
  it('still validates when the proof is for another project dir, refusing before writing anything', async () => {
    const other = await tempDir();
    const file = join(project, '..', 'archive');
    await writeFile(file, rawTarGz([{ name: 'first.txt', type: '0', content: 'x' }, { name: '../x', type: '0', content: 'x' }]));
    const error = await extractArchive(file, project, signal, { validated: { file, format: 'tar.gz', root: await realpath(other) } }).catch((caught: unknown) => caught);
    expect((error as ArtifactsError).code).toBe('ARCHIVE_UNSAFE');
    expect(existsSync(join(project, 'first.txt'))).toBe(false);
  });
});
