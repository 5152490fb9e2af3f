/**
 * Archive bombs: small archives that inflate to a given size (one file of zeros), streamed to
 * disk so that making a 1 GiB one never holds it in memory. Gzip and deflate reach ~1030:1 on
 * zeros, so 1 GiB is a ~1 MB archive.
 */
import { createWriteStream } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { ZipFile } from 'yazl';

const MiB = 1024 * 1024;

function zeros(bytes: number): Readable {
  const block = Buffer.alloc(MiB);
  return Readable.from(
    (function* () {
      for (let left = bytes; left > 0; left -= MiB) yield left >= MiB ? block : block.subarray(0, left);
    })(),
  );
}

/** A ustar header for a regular file `name` of `size` bytes. */
function tarHeader(name: string, size: number): Buffer {
  const header = Buffer.alloc(512);
  const octal = (offset: number, length: number, value: number): void => {
    header.write(`${value.toString(8).padStart(length - 1, '0')}\0`, offset, length, 'latin1');
  };
  header.write(name, 0, 100, 'utf8');
  octal(100, 8, 0o644);
  octal(108, 8, 0);
  octal(116, 8, 0);
  octal(124, 12, size);
  octal(136, 12, Math.floor(Date.now() / 1000));
  header.write('0', 156, 1, 'latin1');
  header.write('ustar\u000000', 257, 8, 'latin1');
  header.fill(' ', 148, 156);
  let sum = 0;
  for (const byte of header) sum += byte;
  header.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 8, 'latin1');
  return header;
}

/** Writes a tar.gz at `path` holding `name`: `bytes` zeros (a multiple of 512). */
export async function writeTarGzBomb(path: string, bytes: number, name = 'bomb.bin'): Promise<void> {
  await writeZerosTarGz(path, [{ name, bytes }]);
}

/** Writes a tar.gz at `path` holding each of `files` as that many zeros (multiples of 512), in order. */
export async function writeZerosTarGz(path: string, files: Array<{ name: string; bytes: number }>): Promise<void> {
  const parts = Readable.from(
    (async function* () {
      for (const file of files) {
        yield tarHeader(file.name, file.bytes);
        yield* zeros(file.bytes);
      }
      yield Buffer.alloc(1024);
    })(),
  );
  await pipeline(parts, createGzip({ level: 9 }), createWriteStream(path));
}

/** Writes a zip at `path` holding `name`: `bytes` zeros, deflated. */
export async function writeZipBomb(path: string, bytes: number, name = 'bomb.bin'): Promise<void> {
  const zip = new ZipFile();
  zip.addReadStream(zeros(bytes), name, { compress: true, mode: 0o100644 });
  zip.end();
  await pipeline(zip.outputStream, createWriteStream(path));
}
