/**
 * The page's files: the compiled browser modules (`client/`, built by `tsconfig.ui.json`), the
 * style sheet and icon (`static/`, copied next to this module by `npm run build`) and the ANSI
 * library from its own package. All ship in the npm package; nothing is fetched from elsewhere.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Reply } from '../http/reply.js';
import { packageRoot } from '../../util/package-root.js';

const here = fileURLToPath(new URL('.', import.meta.url));

/** Where each file was found, by its candidate list. */
const holding = new Map<string, string>();

/**
 * The first of `candidates` (beside this module in `dist/`, or under `src/` in tests) that holds `file`.
 * The bundled CLI runs this module from `dist/cli/chunks/`, so the package's own `dist/server/ui/` is
 * looked at too.
 */
function firstHolding(file: string, candidates: string[]): string {
  const key = candidates.join('\0');
  const known = holding.get(key);
  if (known !== undefined) return known;
  const dir = candidates.find((candidate) => existsSync(join(candidate, file)));
  // Kept once found; until then each request looks again (a test's server may start before the build).
  if (dir !== undefined) holding.set(key, dir);
  return dir ?? candidates[0]!;
}

/** The compiled browser modules; when the server runs from `src/` (tests under vitest), the build's copy. */
function clientDir(): string {
  return firstHolding('main.js', [join(here, 'client'), join(packageRoot(), 'dist', 'server', 'ui', 'client')]);
}

/** The style sheet and icon: beside this module, else the package's build, else the sources. */
function staticDir(): string {
  const root = packageRoot();
  return firstHolding('style.css', [join(here, 'static'), join(root, 'dist', 'server', 'ui', 'static'), join(root, 'src', 'server', 'ui', 'static')]);
}

const TYPES: Record<string, string> = {
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  svg: 'image/svg+xml',
};

/** Where `/-/ui/assets/NAME` and `/-/ui/vendor/NAME` come from; undefined for anything else. */
function assetPath(kind: string, name: string): string | undefined {
  if (!/^[a-z0-9_-]+\.(js|css|svg)$/.test(name)) return undefined;
  if (kind === 'vendor') return name === 'ansi_up.js' ? createRequire(import.meta.url).resolve('ansi_up') : undefined;
  if (name.endsWith('.js')) return join(clientDir(), name);
  return join(staticDir(), name);
}

const cache = new Map<string, { body: Buffer; etag: string }>();

/** A file of the page, with an ETag so a reload costs a 304. */
export async function assetReply(kind: string, name: string, ifNoneMatch: string | undefined): Promise<Reply | undefined> {
  const path = assetPath(kind, name);
  if (path === undefined) return undefined;
  let entry = cache.get(path);
  if (!entry) {
    let body: Buffer;
    try {
      body = await readFile(path);
    } catch {
      return undefined;
    }
    entry = { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` };
    cache.set(path, entry);
  }
  const headers = { etag: entry.etag, 'cache-control': 'no-cache', 'x-content-type-options': 'nosniff' };
  if (ifNoneMatch === entry.etag) return { status: 304, headers };
  return { status: 200, headers: { ...headers, 'content-type': TYPES[name.split('.').pop() ?? ''] ?? 'application/octet-stream' }, body: entry.body };
}
