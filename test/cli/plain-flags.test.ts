/**
 * The daemon's own flag reader (plain-flags.ts) against yargs: wherever it takes a command line, yargs
 * (the same program main.ts builds) takes it too and hands `run` the same values; everything else it
 * leaves to yargs. The command lines the unit and operators write are taken without yargs.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RUN_FLAGS, runCommand } from '../../src/cli/commands/run.js';
import type { EnvFlag } from '../../src/cli/env-options.js';
import { GLOBAL_FLAGS, LOG_FORMAT_FLAG } from '../../src/cli/global-options.js';
import { parsePlainFlags } from '../../src/cli/plain-flags.js';
import { buildProgram } from '../../src/cli/program.js';

const FLAGS: readonly EnvFlag[] = [...GLOBAL_FLAGS, LOG_FORMAT_FLAG, ...RUN_FLAGS];
const camel = (name: string): string => name.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
/** Every key a handler or middleware could read. */
const KEYS = [...new Set(FLAGS.flatMap((f) => [f.flag, camel(f.flag), ...(f.alias === undefined ? [] : [f.alias].flat())]))];

/** What yargs hands `run`'s handler for `args`, or its usage error. */
async function viaYargs(args: readonly string[]): Promise<{ argv?: Record<string, unknown>; error?: string }> {
  let argv: Record<string, unknown> | undefined;
  let error: string | undefined;
  const capture = { ...runCommand, handler: (parsed: Record<string, unknown>) => void (argv = parsed) };
  const program = await buildProgram(args, [capture], {
    middleware: () => undefined,
    fail: (message, err) => void (error = message ?? err?.message ?? 'failed'),
  });
  await program.exitProcess(false).parseAsync();
  return { ...(argv ? { argv } : {}), ...(error !== undefined ? { error } : {}) };
}

function picked(argv: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(KEYS.filter((k) => argv[k] !== undefined).map((k) => [k, argv[k]]));
}

describe('run without yargs', () => {
  it('takes the command lines the unit and operators write', () => {
    const lines = [
      ['run', '--config', '/etc/ci-runner/config.toml'],
      ['--debug', 'run', '-c', 'c.toml'],
      ['run', '-c=c.toml', '--listen-address', ':9252', '-u', '1000', '-d', '/srv'],
      ['run', '--log-format', 'json', '--log-level=warn', '--working-directory=/x y'],
      ['-l', 'debug', 'run'],
    ];
    for (const line of lines) expect(parsePlainFlags(line, 'run', FLAGS), line.join(' ')).toBeDefined();
    expect(parsePlainFlags(['run', '--user', '1000'], 'run', FLAGS)).toMatchObject({ user: '1000', u: '1000' });
  });

  it('leaves help, versions, unknown, repeated, negated and clustered flags, bad choices and stray words to yargs', () => {
    const lines = [
      ['run', '--help'], ['run', '-h'], ['--version'], ['run', '--bogus'], ['run', '-c', 'a', '-c', 'b'],
      ['run', '--no-debug'], ['run', '-cd', 'x'], ['run', '--log-level', 'loud'], ['run', 'extra'],
      ['run', '--config'], ['run', '--config', '--debug'], ['run', '--'], ['run', '--debug=false'], ['serve'], [],
    ];
    for (const line of lines) expect(parsePlainFlags(line, 'run', FLAGS), line.join(' ')).toBeUndefined();
  });

  it('gives run the same values as yargs wherever it takes the command line', async () => {
    const flag = fc.constantFrom(
      '--debug', '-c', '--config', '--config=a.toml', '-c=b.toml', '-l', '--log-level', '--log-level=error', '--log-format',
      '-u', '--user', '-d', '--working-directory', '--listen-address', '--listen-address=:9252', '--bogus', '--workingDirectory', '-x',
    );
    const value = fc.constantFrom('x.toml', '1000', ':9252', '0x10', '1e3', '-1', 'info', 'panic', 'loud', 'json', 'text', '127.0.0.1:9252', 'a b', 'true', '', 'run');
    const line = fc
      .tuple(fc.array(fc.tuple(flag, fc.option(value)), { maxLength: 4 }), fc.nat(8))
      .map(([pairs, at]) => {
        const words = pairs.flatMap(([f, v]) => (v === null ? [f] : [f, v]));
        const cut = Math.min(at, words.length);
        return [...words.slice(0, cut), 'run', ...words.slice(cut)];
      });
    let taken = 0;
    await fc.assert(
      fc.asyncProperty(line, async (args) => {
        const plain = parsePlainFlags(args, 'run', FLAGS);
        if (!plain) return;
        taken += 1;
        const yargs = await viaYargs(args);
        expect(yargs.error, args.join(' ')).toBeUndefined();
        expect(picked(plain), args.join(' ')).toEqual(picked(yargs.argv ?? {}));
      }),
      { numRuns: 500 },
    );
    // The comparison is only worth something if many lines were taken.
    expect(taken).toBeGreaterThan(50);
  });
});
