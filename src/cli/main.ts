#!/usr/bin/env -S node --max-semi-space-size=1 --liftoff-only
/**
 * The `ci-runner` command line: one yargs program (program.ts) parses every command line; each
 * subcommand lives in `commands/` and only the one called is loaded.
 * Exit codes: 0 success; 1 a job or pipeline failed; 2 bad usage or configuration; 3 the coordinator
 * refused or could not be reached; 130/143 stopped by a signal. The service commands add LSB's status
 * codes (`status`: 3 not running, 4 not installed) and 69 where systemd is not available.
 * The shebang passes DAEMON_NODE_FLAGS (src/util/node-flags.ts; `env -S` splits them off).
 */
import { COMMAND_NAMES, loadCommands } from './commands/index.js';
import { buildProgram } from './program.js';
import { commandWord, unknownArgumentsMessage, unknownCommandMessage } from './unknown-command.js';
import { isLogFormat, LOG_FORMATS, setLogFormatOverride } from '../log/format-choice.js';

/** `--log-format`, else LOG_FORMAT (GitLab Runner's flag and variable), for every logger made from now on. */
function applyLogFormat(argv: Record<string, unknown>): void {
  const value = argv['log-format'] ?? (process.env.LOG_FORMAT || undefined);
  if (value === undefined) return;
  if (!isLogFormat(value)) {
    process.stderr.write(`ci-runner: LOG_FORMAT: "${String(value)}" is not one of ${LOG_FORMATS.join(', ')}\n`);
    process.exit(2);
  }
  setLogFormatOverride(value);
}

/**
 * zod compiles a schema into generated code at its first parse: ~26 ms for the runner entry's schema,
 * paid again by every schema a command parses once (a config, a job payload). Interpreted, the first
 * parse costs ~7 ms and later ones no more than compiled ones; and no code is generated at run time.
 */
async function interpretSchemas(): Promise<void> {
  const { config } = await import('zod');
  config({ jitless: true });
}

export async function main(argv: string[]): Promise<void> {
  let args = argv;
  let word = commandWord(args);
  if (word === 'help') {
    // GitLab Runner's `help [command]`.
    const at = args.indexOf('help');
    args = [...args.slice(0, at), ...args.slice(at + 1), '--help'];
    word = commandWord(args);
  }
  const problem = word === undefined ? undefined : unknownCommandMessage(word, COMMAND_NAMES);
  if (problem) {
    process.stderr.write(`${problem}\n`);
    process.exitCode = 2;
    return;
  }
  // `--version` alone needs no command module (loading them all costs most of a second).
  const versionOnly = word === undefined && args.includes('--version') && !args.some((a) => a === '--help' || a === '-h');
  if (!versionOnly) await interpretSchemas();
  const program = await buildProgram(args, versionOnly ? [] : await loadCommands(word), {
    middleware: applyLogFormat,
    fail: (message, error, y) => {
      if (error) throw error;
      const help = String(y.help());
      process.stderr.write(`${help}\n\nError: ${unknownArgumentsMessage(message, help)}\n`);
      process.exit(2);
    },
  });
  await program.parseAsync();
}

main(process.argv.slice(2)).catch((error: unknown) => {
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`ci-runner: ${message}\n`);
  process.exitCode = typeof (error as { exitCode?: unknown }).exitCode === 'number' ? (error as { exitCode: number }).exitCode : 1;
});
