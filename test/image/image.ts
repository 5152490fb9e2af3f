/**
 * The container image under test: the repository's Dockerfile, unchanged, built on a local stand-in for
 * its base (.ci/node-base-standin.sh; no registry is reachable here). Both are cached by content so the
 * suite stays fast: the stand-in by the hash it carries, the image as `ci-runner-test/image:<hash>` of
 * the Dockerfile, .dockerignore, every file its COPY lines take from the context and the base's ID.
 */
import { createHash } from 'node:crypto';
import { execFile } from 'node:child_process';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
export const REPO = fileURLToPath(new URL('../../', import.meta.url));
export const IMAGE_REPOSITORY = 'ci-runner-test/image';
/** Label on every container these tests start, so a failed test leaves nothing running. */
export const CONTAINER_LABEL = 'ci-runner-test.image-test=1';

async function docker(args: string[], timeout = 120_000): Promise<string> {
  return (await run('docker', args, { timeout, maxBuffer: 64 * 1024 * 1024 })).stdout.trim();
}

/** The base the Dockerfile builds on: its `ARG NODE_IMAGE=` default. */
export function baseImageOf(dockerfile: string): string {
  const match = /^ARG NODE_IMAGE=(\S+)/m.exec(dockerfile);
  if (!match) throw new Error('the Dockerfile has no `ARG NODE_IMAGE=<base>` line');
  return match[1]!;
}

/** Context paths the Dockerfile's COPY lines take (those without --from), e.g. `package.json`, `src`. */
export function copiedPaths(dockerfile: string): string[] {
  const paths = new Set<string>();
  for (const line of dockerfile.split('\n')) {
    const words = line.trim().split(/\s+/);
    if (words[0] !== 'COPY' || words.some((w) => w.startsWith('--from='))) continue;
    for (const word of words.slice(1, -1)) if (!word.startsWith('--')) paths.add(word.replace(/\/$/, ''));
  }
  return [...paths].sort();
}

async function hashTree(hash: ReturnType<typeof createHash>, path: string): Promise<void> {
  const info = await stat(path);
  if (info.isDirectory()) {
    for (const entry of (await readdir(path)).sort()) await hashTree(hash, join(path, entry));
    return;
  }
  hash.update(`${relative(REPO, path)}\0${info.mode & 0o111 ? 'x' : '-'}\0`);
  hash.update(await readFile(path));
}

/** The tag the image of the current sources and base gets. */
export async function contentTag(): Promise<string> {
  const dockerfile = await readFile(join(REPO, 'Dockerfile'), 'utf8');
  const hash = createHash('sha256');
  hash.update(await docker(['image', 'inspect', '--format', '{{.Id}}', baseImageOf(dockerfile)]));
  for (const path of ['Dockerfile', '.dockerignore', ...copiedPaths(dockerfile)]) await hashTree(hash, join(REPO, path));
  return `${IMAGE_REPOSITORY}:${hash.digest('hex').slice(0, 16)}`;
}

export interface TestImage {
  tag: string;
  /** Milliseconds spent making the stand-in base and building (0 when both were cached). */
  buildMs: number;
  sizeBytes: number;
}

/** Makes sure the stand-in base and the image of the current sources exist; removes older test images. */
export async function testImage(): Promise<TestImage> {
  const started = performance.now();
  await run(join(REPO, '.ci/node-base-standin.sh'), [], { timeout: 15 * 60_000 }).catch((error: Error & { stderr?: string }) => {
    throw new Error(`the stand-in base image could not be built: ${error.stderr || error.message}`);
  });
  const tag = await contentTag();
  const cached = await docker(['image', 'inspect', '--format', '{{.Id}}', tag]).then(
    () => true,
    () => false,
  );
  if (!cached) {
    await run('docker', ['build', '--tag', tag, '.'], { cwd: REPO, timeout: 30 * 60_000, maxBuffer: 64 * 1024 * 1024, env: { ...process.env, DOCKER_CLI_HINTS: 'false' } }).catch(
      (error: Error & { stdout?: string; stderr?: string }) => {
        throw new Error(`docker build failed:\n${(error.stdout ?? '').slice(-4000)}\n${error.stderr ?? error.message}`);
      },
    );
    const older = (await docker(['image', 'ls', IMAGE_REPOSITORY, '--format', '{{.Repository}}:{{.Tag}}'])).split('\n').filter((t) => t && t !== tag);
    if (older.length > 0) await docker(['image', 'rm', ...older]).catch(() => undefined);
  }
  const sizeBytes = Number(await docker(['image', 'inspect', '--format', '{{.Size}}', tag]));
  return { tag, buildMs: cached ? 0 : performance.now() - started, sizeBytes };
}

/** Removes every container these tests started (any state). */
export async function removeTestContainers(): Promise<void> {
  const ids = (await docker(['ps', '-aq', '--filter', `label=${CONTAINER_LABEL}`])).split('\n').filter(Boolean);
  if (ids.length > 0) await docker(['rm', '-f', ...ids]).catch(() => undefined);
}
