/**
 * The package's root directory: the nearest ancestor of this module holding ci-runner's package.json.
 * The same answer from `src/` (tests, tsx), from `dist/` as tsc writes it, and from the bundled CLI's
 * chunks in `dist/cli/chunks/`: no caller counts `../` from where its own module happens to sit.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CiRunnerError } from './errors.js';

let found: string | undefined;

export function packageRoot(): string {
  if (found !== undefined) return found;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: unknown }).name === 'ci-runner') {
      found = dir;
      return dir;
    }
    const parent = dirname(dir);
    if (parent === dir) throw new CiRunnerError('PACKAGE_ROOT_MISSING', 'cannot find the ci-runner package root (package.json) above this module');
    dir = parent;
  }
}

/** The package's package.json, parsed. */
export function packageManifest(): { name?: string; version?: string; gitHead?: string } {
  return JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { name?: string; version?: string; gitHead?: string };
}
