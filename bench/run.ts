/**
 * `npm run bench`: runs every benchmark module in this folder (or those named on the command line,
 * e.g. `npm run bench -- trace`). Each module exports `run()`, which prints its own figures. Figures
 * are printed, never asserted: these machines are shared and noisy.
 */
import { readdir } from 'node:fs/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { basename, join } from 'node:path';

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
