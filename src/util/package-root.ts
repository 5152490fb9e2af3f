/**
 * The package's root directory: the nearest ancestor of this module holding ci-runner's package.json.
 * The same answer from `src/` (tests, tsx), from `dist/` as tsc writes it, and from the bundled CLI's
 * chunks in `dist/cli/chunks/`: no caller counts `../` from where its own module happens to sit.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CiRunnerError } from './errors.js';

type Manifest = { name?: string; version?: string; gitHead?: string };

/** The root and its package.json, found once per process. */
let found: { dir: string; manifest: Manifest } | undefined;

export function packageRoot(): string {
  return locate().dir;
}

/** The package's package.json, parsed (read once, when the root is found). */
export function packageManifest(): Manifest {
  return locate().manifest;
}

function locate(): { dir: string; manifest: Manifest } {
  if (found !== undefined) return found;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const path = join(dir, 'package.json');
    const manifest = existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as Manifest) : undefined;
    if (manifest?.name === 'ci-runner') {
      found = { dir, manifest };
      return found;
    }
    const parent = dirname(dir);
    if (parent === dir) throw new CiRunnerError('PACKAGE_ROOT_MISSING', 'cannot find the ci-runner package root (package.json) above this module');
    dir = parent;
  }
}
