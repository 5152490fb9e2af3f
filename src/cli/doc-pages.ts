/**
 * The docs page about each command, one table: `ci-runner COMMAND --help` ends with it, and
 * `ci-runner --help` with the README. The pages ship in the package (package.json `files`), so the
 * path printed is the installed copy; where they are missing (the container image) the line names the
 * page in the source repository instead.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../util/package-root.js';

const SERVICE = 'docs/install.md';
const TOKENS = 'docs/register.md';

/** Each command (by its first name) and its page, relative to the repository's root. */
export const COMMAND_DOCS: Readonly<Record<string, string>> = {
  serve: 'docs/server.md',
  'run-once': TOKENS,
  register: TOKENS,
  unregister: TOKENS,
  verify: TOKENS,
  'reset-token': TOKENS,
  list: 'docs/configuration.md',
  run: 'docs/operations.md',
  demo: 'README.md',
  exec: 'docs/exec.md',
  install: SERVICE,
  uninstall: SERVICE,
  start: SERVICE,
  stop: SERVICE,
  restart: SERVICE,
  status: SERVICE,
  'artifacts-downloader': 'docs/executors/custom.md',
  'artifacts-uploader': 'docs/executors/custom.md',
  'cache-extractor': 'docs/executors/custom.md',
  'cache-archiver': 'docs/executors/custom.md',
};

/** The page of the program as a whole. */
export const PROGRAM_DOCS = 'README.md';


/** The help text's last line for `page`. */
export function docsEpilogue(page: string): string {
  const installed = join(packageRoot(), page);
  return `Documentation: ${existsSync(installed) ? installed : `${page} in ci-runner's source repository`}`;
}
