/**
 * `npm run bench`: runs every benchmark module in this folder (or those named on the command line,
 * e.g. `npm run bench -- trace`). Each module exports `run()`, which prints its own figures. Figures
 * are printed, never asserted: these machines are shared and noisy.
 *
 * The benchmarks that run the agent in this process measure the daemon as it ships: without its V8
 * flags (src/util/node-flags.ts) this file starts itself again with them.
 */
import { readdir } from 'node:fs/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { basename, join } from 'node:path';
import { execa } from 'execa';
import { DAEMON_NODE_FLAGS } from '../src/util/node-flags.js';

if (!DAEMON_NODE_FLAGS.every((flag) => process.execArgv.includes(flag))) {
  const again = await execa(process.execPath, [...DAEMON_NODE_FLAGS, ...process.execArgv, ...process.argv.slice(1)], { stdio: 'inherit', reject: false });
  process.exit(again.exitCode ?? 1);
}

interface BenchModule {
  run(): Promise<void>;
}

const here = fileURLToPath(new URL('.', import.meta.url));
const wanted = new Set(process.argv.slice(2));
const files = (await readdir(here))
  .filter((file) => file.endsWith('.ts') && file !== 'run.ts')
  .filter((file) => wanted.size === 0 || wanted.has(basename(file, '.ts')))
  .sort();

if (files.length === 0) {
  process.stderr.write(`no benchmark matches ${[...wanted].join(', ')}\n`);
  process.exitCode = 2;
}

for (const file of files) {
  const module = (await import(pathToFileURL(join(here, file)).href)) as Partial<BenchModule>;
  if (typeof module.run !== 'function') continue;
  process.stdout.write(`\n## ${basename(file, '.ts')}\n`);
  const started = performance.now();
  await module.run();
  process.stdout.write(`(${((performance.now() - started) / 1000).toFixed(1)} s)\n`);
}
