/**
 * `ci-runner --help` and each command's `--help` end with the docs page about it (src/cli/doc-pages.ts),
 * a page that exists.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { COMMAND_ALIASES, COMMAND_NAMES } from '../../src/cli/commands/index.js';
import { COMMAND_DOCS, PROGRAM_DOCS } from '../../src/cli/doc-pages.js';
import { cli } from './cli.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

describe('--help names the docs page', () => {
  it('has a page that exists for every command', () => {
    const commands = COMMAND_NAMES.filter((name) => COMMAND_ALIASES[name] === undefined);
    expect(commands.filter((name) => COMMAND_DOCS[name] === undefined)).toEqual([]);
    expect([PROGRAM_DOCS, ...Object.values(COMMAND_DOCS)].filter((page) => !existsSync(`${ROOT}${page}`))).toEqual([]);
  });

  it('ends the program\'s help with the README and each command\'s with its page, for GitLab Runner\'s names too', async () => {
    const cases: Array<[string[], string]> = [
      [['--help'], PROGRAM_DOCS],
      [['register', '--help'], COMMAND_DOCS.register!],
      [['help', 'exec'], COMMAND_DOCS.exec!],
      [['run-single', '--help'], COMMAND_DOCS['run-once']!],
      [['install', '--help'], COMMAND_DOCS.install!],
    ];
    for (const [args, page] of cases) {
      const result = await cli(args);
      expect(result.exitCode, result.all).toBe(0);
      expect(result.stdout.trimEnd().split('\n').at(-1), args.join(' ')).toBe(`Documentation: ${ROOT}${page}`);
    }
  });
});
