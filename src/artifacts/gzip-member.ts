/**
 * One gzip member (RFC 1952) that names the file it holds, streamed: header with FNAME and MTIME,
 * the raw deflate stream, then CRC-32 and size. Node's zlib writes gzip headers without a name, and
 * GitLab Runner's `gzip` artifact format names each file, so the header is written here and zlib
 * does the compressing. Members concatenated form a valid gzip stream.
 */
import { createDeflateRaw, crc32 } from 'node:zlib';
import type { Readable } from 'node:stream';

const FLAG_NAME = 0x08;
const OS_UNIX = 3;

/** The member's bytes for the file `name`, read from `content`. */
export async function* gzipMember(name: string, mtime: Date, content: Readable, level?: number): AsyncGenerator<Buffer> {
  const header = Buffer.alloc(10);
  header.writeUInt8(0x1f, 0);
  header.writeUInt8(0x8b, 1);
  header.writeUInt8(8, 2); // deflate
  header.writeUInt8(FLAG_NAME, 3);
  header.writeUInt32LE(Math.max(0, Math.floor(mtime.getTime() / 1000)) >>> 0, 4);
  header.writeUInt8(0, 8);
  header.writeUInt8(OS_UNIX, 9);
  // The name field is ISO 8859-1 and NUL-terminated: a NUL in a path would end it early.
  yield Buffer.concat([header, Buffer.from(name.replace(/\0/g, '_'), 'latin1'), Buffer.alloc(1)]);
  let crc = 0;
  let size = 0;
  const deflate = createDeflateRaw(level === undefined ? {} : { level });
  const feed = (async () => {
    try {
      for await (const chunk of content as AsyncIterable<Buffer>) {
        crc = crc32(chunk, crc);
        size += chunk.length;
        if (!deflate.write(chunk)) await new Promise((resolve) => {
          deflate.once('drain', resolve);
          deflate.once('close', resolve);
        });
      }
      deflate.end();
    } catch (error) {
      deflate.destroy(error as Error);
    }
  })();
  try {
    for await (const chunk of deflate as AsyncIterable<Buffer>) yield chunk;
    await feed;
  } finally {
    content.destroy();
    deflate.destroy();
  }
  const trailer = Buffer.alloc(8);
  trailer.writeUInt32LE(crc >>> 0, 0);
  trailer.writeUInt32LE(size >>> 0, 4);
  yield trailer;
}
