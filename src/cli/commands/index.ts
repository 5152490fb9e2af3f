import type { CommandModule } from 'yargs';
import { serveCommand } from './serve.js';

/** Every subcommand of `ci-runner`, in the order `--help` lists them. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each command has its own argument type
export const commands: Array<CommandModule<any, any>> = [
  serveCommand,
];
