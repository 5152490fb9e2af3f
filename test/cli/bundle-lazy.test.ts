/**
 * The CLI bundle (scripts/build-dist.mjs) keeps string-width's start-up work off every command line:
 * its `Intl.Segmenter` is built only when text is measured, as help and usage errors do.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { CLI } from './cli.js';
import { workDirs } from './helpers.js';

/** Counts `new Intl.Segmenter()` in the CLI's process and prints the count at exit (on stderr). */
const COUNTER = `
const Real = Intl.Segmenter;
let made = 0;
Intl.Segmenter = class extends Real { constructor(...args) { super(...args); made += 1; } };
process.on('exit', () => process.stderr.write('segmenters=' + made + '\\n'));
`;

async function segmentersMade(args: string[]): Promise<number> {
  const d = await workDirs();
  const counter = join(d.root, 'counter.mjs');
  await writeFile(counter, COUNTER);
  const result = await execa(process.execPath, ['--import', counter, CLI, ...args], { reject: false, stdin: 'ignore', cwd: d.root });
  const made = /segmenters=(\d+)/.exec(result.stderr)?.[1];
  expect(made, result.stderr).toBeDefined();
  return Number(made);
}

describe('the CLI bundle', () => {
  it('builds no Intl.Segmenter for a command that prints no help', async () => {
    const d = await workDirs();
    const config = join(d.root, 'config.toml');
    await writeFile(config, '', { mode: 0o600 });
    expect(await segmentersMade(['list', '-c', config])).toBe(0);
  });

  it('still measures help text with string-width', async () => {
    expect(await segmentersMade(['exec', '--help'])).toBeGreaterThan(0);
  });
});
