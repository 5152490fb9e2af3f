/**
 * Helpers for the artifacts tests: temp dirs, a job context, and hand-made (hostile) archives —
 * tar headers and zip records are written byte by byte, so the tests can hold names and entry types
 * no well-behaved archiver would produce.
 */
import { lstat, mkdir, mkdtemp, readFile, readdir, readlink, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { RunnerApiClient } from '../../src/client/runner-api.js';
import type { ArtifactsContext } from '../../src/artifacts/index.js';
import type { BuildPayload } from '../../src/protocol/types.js';

const cleanups: string[] = [];

/** A fresh temp dir, removed by {@link removeTempDirs}. */
export async function tempDir(prefix = 'ci-artifacts-'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  cleanups.push(dir);
  return dir;
}

export async function removeTempDirs(): Promise<void> {
  await Promise.all(cleanups.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
}

/** Writes `files` (relative path → content) under `dir`. */
export async function writeFiles(dir: string, files: Record<string, string | Buffer>): Promise<void> {
  for (const [name, content] of Object.entries(files)) {
    await mkdir(dirname(join(dir, name)), { recursive: true });
    await writeFile(join(dir, name), content);
  }
}

/** A build payload with just what the artifacts stages read. */
export function fakeBuild(overrides: Partial<BuildPayload> = {}): BuildPayload {
  return {
    id: 1,
    ref: 'main',
    tag: false,
    sha: '0123456789abcdef0123456789abcdef01234567',
    status: 'running',
    name: 'test',
    token: 'build-token',
    stage: 'test',
    project_id: 7,
    project_name: 'project',
    commands: 'true',
    repo_url: 'http://gitlab-ci-token:build-token@127.0.0.1:1/group/project.git',
    before_sha: '0'.repeat(40),
    allow_git_fetch: true,
    options: {},
    timeout: 3600,
    variables: [],
    depends_on_builds: [],
    credentials: [],
    ...overrides,
  };
}

export interface TestContext extends ArtifactsContext {
  lines: string[];
}

/** A context whose trace lines are collected in `lines`. */
export function testContext(parts: { build: BuildPayload; projectDir: string; stateDir: string; client?: RunnerApiClient; signal?: AbortSignal }): TestContext {
  const lines: string[] = [];
  return {
    build: parts.build,
    client: parts.client ?? new RunnerApiClient({ url: 'http://127.0.0.1:9' }),
    projectDir: parts.projectDir,
    stateDir: parts.stateDir,
    signal: parts.signal ?? new AbortController().signal,
    log: (line) => lines.push(line),
    lines,
  };
}

export interface RawTarEntry {
  name: string;
  /** ustar type flag: '0' file, '1' hard link, '2' symlink, '3' char device, '4' block device, '5' directory, '6' fifo. */
  type: string;
  content?: string | Buffer;
  linkname?: string;
  mode?: number;
}

/** A tar archive built header by header (ustar, no checks on names). */
export function rawTar(entries: RawTarEntry[]): Buffer {
  const blocks: Buffer[] = [];
  for (const entry of entries) {
    const content = Buffer.from(entry.content ?? '');
    const header = Buffer.alloc(512);
    header.write(entry.name, 0, 100, 'utf8');
    writeOctal(header, 100, 8, entry.mode ?? (entry.type === '5' ? 0o755 : 0o644));
    writeOctal(header, 108, 8, 0);
    writeOctal(header, 116, 8, 0);
    writeOctal(header, 124, 12, entry.type === '0' ? content.length : 0);
    writeOctal(header, 136, 12, Math.floor(Date.now() / 1000));
    header.write(entry.type, 156, 1, 'latin1');
    header.write(entry.linkname ?? '', 157, 100, 'utf8');
    header.write('ustar\u000000', 257, 8, 'latin1');
    header.fill(' ', 148, 156);
    let sum = 0;
    for (const byte of header) sum += byte;
    header.write(`${sum.toString(8).padStart(6, '0')}\u0000 `, 148, 8, 'latin1');
    blocks.push(header);
    if (entry.type === '0' && content.length > 0) {
      blocks.push(content, Buffer.alloc((512 - (content.length % 512)) % 512));
    }
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

export function rawTarGz(entries: RawTarEntry[]): Buffer {
  return gzipSync(rawTar(entries));
}

function writeOctal(buffer: Buffer, offset: number, length: number, value: number): void {
  buffer.write(`${value.toString(8).padStart(length - 1, '0')}\u0000`, offset, length, 'latin1');
}

export interface RawZipEntry {
  name: string;
  content?: string | Buffer;
  /** Full unix st_mode (type + permissions) for the external attributes. */
  unixMode?: number;
}

/** A zip archive (stored entries, unix "made by") built record by record. */
export function rawZip(entries: RawZipEntry[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const entry of entries) {
    const name = Buffer.from(entry.name, 'utf8');
    const data = Buffer.from(entry.content ?? '');
    const crc = crc32(data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(0x0800, 6);
    local.writeUInt16LE(0, 8);
    local.writeUInt32LE(0x00210000, 10);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(data.length, 18);
    local.writeUInt32LE(data.length, 22);
    local.writeUInt16LE(name.length, 26);
    local.writeUInt16LE(0, 28);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE((3 << 8) | 20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(0x0800, 8);
    central.writeUInt16LE(0, 10);
    central.writeUInt32LE(0x00210000, 12);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(data.length, 20);
    central.writeUInt32LE(data.length, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE(((entry.unixMode ?? 0o100644) << 16) >>> 0, 38);
    central.writeUInt32LE(offset, 42);
    locals.push(local, name, data);
    centrals.push(central, name);
    offset += local.length + name.length + data.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k += 1) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(data: Buffer): number {
  let crc = 0xffffffff;
  for (const byte of data) crc = (CRC_TABLE[(crc ^ byte) & 0xff] as number) ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

/** An archive entry for {@link buildArchive}: a directory, a file, a symlink or (tar only) a hard link. */
export type LayoutEntry = { name: string; dir: true } | { name: string; file: string } | { name: string; symlink: string } | { name: string; hardlink: string };

export type TestArchiveFormat = 'tar.gz' | 'tar' | 'zip';

/** The same entries as a tar.gz, a tar or a zip (zip has no hard links). */
export function buildArchive(format: TestArchiveFormat, entries: LayoutEntry[]): Buffer {
  if (format === 'zip') {
    return rawZip(
      entries.map((entry) => {
        if ('dir' in entry) return { name: entry.name.endsWith('/') ? entry.name : `${entry.name}/`, unixMode: 0o040755 };
        if ('file' in entry) return { name: entry.name, content: entry.file };
        if ('symlink' in entry) return { name: entry.name, content: entry.symlink, unixMode: 0o120777 };
        throw new Error('zip archives have no hard links');
      }),
    );
  }
  const tar = entries.map((entry): RawTarEntry => {
    if ('dir' in entry) return { name: entry.name, type: '5' };
    if ('file' in entry) return { name: entry.name, type: '0', content: entry.file };
    if ('symlink' in entry) return { name: entry.name, type: '2', linkname: entry.symlink };
    return { name: entry.name, type: '1', linkname: entry.hardlink };
  });
  return format === 'tar' ? rawTar(tar) : rawTarGz(tar);
}

/** Everything under `dir`: path → 'dir', 'link:<target>' or 'file:<mode>:<content>', to compare before and after. */
export async function treeOf(dir: string): Promise<Record<string, string>> {
  const tree: Record<string, string> = {};
  const visit = async (relative: string): Promise<void> => {
    for (const name of (await readdir(join(dir, relative))).sort()) {
      const path = relative === '' ? name : `${relative}/${name}`;
      const stats = await lstat(join(dir, path));
      if (stats.isSymbolicLink()) tree[path] = `link:${await readlink(join(dir, path))}`;
      else if (stats.isDirectory()) {
        tree[path] = 'dir';
        await visit(path);
      } else tree[path] = `file:${(stats.mode & 0o7777).toString(8)}:${await readFile(join(dir, path), 'utf8')}`;
    }
  };
  await visit('');
  return tree;
}
