/**
 * Git LFS for the projects the server serves (read-only, the "basic" transfer): `POST
 * <project>.git/info/lfs/objects/batch` answers a download request with where each object is, and
 * `GET <project>.git/info/lfs/objects/<oid>` sends one, from the repository's own LFS store
 * (`.git/lfs/objects/ab/cd/<oid>`, where `git lfs` keeps what it tracks). Uploads are refused, as
 * pushes are. The caller has authenticated the request (a live build's token, as for git).
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';

const LFS_TYPE = 'application/vnd.git-lfs+json';
/** A batch request names objects by oid and size; a few hundred KiB is thousands of them. */
const MAX_BATCH_BYTES = 1024 * 1024;
const OID = /^[0-9a-f]{64}$/;

function reply(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'Content-Type': LFS_TYPE }).end(JSON.stringify(body));
}

/** Where `oid` is stored for the repository at `repoPath` (a work tree's `.git`, or a bare repository). */
async function objectPath(repoPath: string, oid: string): Promise<string | undefined> {
  for (const gitDir of [join(repoPath, '.git'), repoPath]) {
    const path = join(gitDir, 'lfs', 'objects', oid.slice(0, 2), oid.slice(2, 4), oid);
    const info = await stat(path).catch(() => undefined);
    if (info?.isFile()) return path;
  }
  return undefined;
}

async function readBody(req: IncomingMessage): Promise<string | undefined> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const part of req) {
    size += (part as Buffer).length;
    if (size > MAX_BATCH_BYTES) return undefined;
    parts.push(part as Buffer);
  }
  return Buffer.concat(parts).toString('utf8');
}

/** Serves one LFS request for the project at `repoPath`, named `project` in URLs under `baseUrl`. */
export async function serveLfs(req: IncomingMessage, res: ServerResponse, request: { repoPath: string; project: string; baseUrl: string; oid?: string | undefined }): Promise<void> {
  if (request.oid !== undefined) {
    const path = req.method === 'GET' ? await objectPath(request.repoPath, request.oid) : undefined;
    if (!path) return reply(res, req.method === 'GET' ? 404 : 405, { message: req.method === 'GET' ? 'Object not found' : 'Use GET' });
    res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': (await stat(path)).size });
    await pipeline(createReadStream(path), res).catch(() => res.destroy());
    return;
  }
  if (req.method !== 'POST') return reply(res, 405, { message: 'Use POST for the batch API' });
  const text = await readBody(req);
  let batch: { operation?: unknown; objects?: unknown };
  try {
    batch = JSON.parse(text ?? '') as typeof batch;
  } catch {
    return reply(res, text === undefined ? 413 : 422, { message: text === undefined ? 'Batch request too large' : 'Batch request is not JSON' });
  }
  if (batch.operation !== 'download') return reply(res, 403, { message: 'Pushing is not allowed: ci-runner serves repositories read-only' });
  const objects = Array.isArray(batch.objects) ? batch.objects : [];
  const base = `${request.baseUrl.replace(/\/+$/, '')}/${request.project}.git/info/lfs/objects`;
  const answers = await Promise.all(objects.map(async (object: unknown) => {
    const { oid, size } = (typeof object === 'object' && object !== null ? object : {}) as { oid?: unknown; size?: unknown };
    if (typeof oid !== 'string' || !OID.test(oid)) return { oid: String(oid), size: 0, error: { code: 422, message: 'Invalid object id' } };
    const path = await objectPath(request.repoPath, oid);
    if (!path) return { oid, size, error: { code: 404, message: 'Object does not exist' } };
    return { oid, size: (await stat(path)).size, authenticated: true, actions: { download: { href: `${base}/${oid}` } } };
  }));
  reply(res, 200, { transfer: 'basic', objects: answers });
}
