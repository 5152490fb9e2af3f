import type { CommandModule } from 'yargs';
import { serveCommand } from './serve.js';
import { runOnceCommand } from './run-once.js';
import { registerCommand } from './register.js';
import { unregisterCommand } from './unregister.js';
import { verifyCommand } from './verify.js';
import { listCommand } from './list.js';
import { runCommand } from './run.js';
import { demoCommand } from './demo.js';

/** Every subcommand of `ci-runner`, in the order `--help` lists them. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each command has its own argument type
export const commands: Array<CommandModule<any, any>> = [
  serveCommand,
  runOnceCommand,
  registerCommand,
  unregisterCommand,
  verifyCommand,
  listCommand,
  runCommand,
  demoCommand,
];
