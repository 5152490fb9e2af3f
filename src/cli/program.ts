/**
 * The yargs program of `ci-runner`: global options, strictness, help layout and the given commands.
 * main.ts runs it with the one command called (all of them for `--help`).
 */
import type { Argv, CommandModule, MiddlewareFunction } from 'yargs';
import { addGlobalOptions } from './global-options.js';
import { COMMAND_DOCS, docsEpilogue, PROGRAM_DOCS } from './doc-pages.js';
import { skipHelpPrerender } from './help-prerender.js';
import { VERSION } from '../util/version.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each command has its own argument type
type AnyCommand = CommandModule<any, any>;

export interface ProgramHooks {
  /** Runs before each handler with the parsed flags. */
  middleware: MiddlewareFunction;
  /** yargs' failure callback: a usage error (`error` undefined) or a handler's throw. */
  fail: (message: string, error: Error | undefined, y: Argv) => void;
}

export async function buildProgram(args: readonly string[], commands: readonly AnyCommand[], hooks: ProgramHooks): Promise<Argv> {
  const { default: yargs } = await import('yargs');
  let program = addGlobalOptions(yargs([...args]))
    .scriptName('ci-runner')
    // English whatever LANG says, as GitLab Runner's help is (and the bundled CLI ships no yargs locales).
    .detectLocale(false)
    .usage('$0 <command> [options]\n\nA CI runner for the GitLab runner API (/api/v4, and the legacy /ci/api/v1), with an embedded reference server.')
    .version(VERSION)
    .strict()
    .demandCommand(1, 'Name a command; see --help.')
    .recommendCommands()
    .middleware(hooks.middleware)
    .wrap(Math.min(110, process.stdout.columns || 100))
    .epilogue(docsEpilogue(PROGRAM_DOCS))
    .fail(hooks.fail);
  for (const command of commands) program = program.command(withDocs(command));
  program = program.middleware((argv) => lastValueWins(program, argv), true);
  skipHelpPrerender(program);
  return program;
}

/** The command, its `--help` ending with the line naming its docs page (doc-pages.ts). */
function withDocs(command: AnyCommand): AnyCommand {
  const page = COMMAND_DOCS[String(command.command).split(' ')[0] ?? ''];
  if (page === undefined) return command;
  const { builder } = command;
  return {
    ...command,
    builder: (y: Argv) => {
      const built = typeof builder === 'function' ? (builder(y) ?? y) : y.options(builder ?? {});
      return (built as Argv).epilogue(docsEpilogue(page));
    },
  };
}

/**
 * A flag given twice keeps its last value, as in GitLab Runner (urfave/cli), instead of reaching a
 * command as an array it does not expect; flags declared as lists (`--env`, `--docker-volumes`, …)
 * still collect every value. yargs' own `duplicate-arguments-array: false` would cut those lists too.
 */
function lastValueWins(program: Argv, argv: Record<string, unknown>): void {
  const options = (program as unknown as { getOptions(): { array: string[]; alias: Record<string, string[]> } }).getOptions();
  const lists = new Set<string>();
  for (const key of options.array) {
    for (const name of [key, ...(options.alias[key] ?? [])]) {
      lists.add(name);
      lists.add(name.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase()));
    }
  }
  for (const [key, value] of Object.entries(argv)) {
    if (key !== '_' && Array.isArray(value) && !lists.has(key)) argv[key] = value.at(-1);
  }
}
