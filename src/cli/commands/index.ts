import type { CommandModule } from 'yargs';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each command has its own argument type
type AnyCommand = CommandModule<any, any>;

/**
 * Every subcommand of `ci-runner`, in the order `--help` lists them, each loaded on demand: a
 * command's module pulls in its whole subsystem (server, agent, executors, archivers), and loading
 * all of them costs a second of CPU at every start. Only `--help` and unknown commands load them all.
 */
const loaders: ReadonlyArray<readonly [name: string, load: () => Promise<AnyCommand>]> = [
  ['serve', async () => (await import('./serve.js')).serveCommand],
  ['run-once', async () => (await import('./run-once.js')).runOnceCommand],
  ['register', async () => (await import('./register.js')).registerCommand],
  ['unregister', async () => (await import('./unregister.js')).unregisterCommand],
  ['verify', async () => (await import('./verify.js')).verifyCommand],
  ['reset-token', async () => (await import('./reset-token.js')).resetTokenCommand],
  ['list', async () => (await import('./list.js')).listCommand],
  ['run', async () => (await import('./run.js')).runCommand],
  ['demo', async () => (await import('./demo.js')).demoCommand],
  ['exec', async () => (await import('./exec.js')).execCommand],
  ['install', async () => (await import('./install.js')).installCommand],
  ['uninstall', async () => (await import('./install.js')).uninstallCommand],
  ['start', async () => (await import('./service-control.js')).startCommand],
  ['stop', async () => (await import('./service-control.js')).stopCommand],
  ['restart', async () => (await import('./service-control.js')).restartCommand],
  ['status', async () => (await import('./service-control.js')).statusCommand],
  ['artifacts-downloader', async () => (await import('./helpers.js')).artifactsDownloaderCommand],
  ['artifacts-uploader', async () => (await import('./helpers.js')).artifactsUploaderCommand],
  ['cache-extractor', async () => (await import('./helpers.js')).cacheExtractorCommand],
  ['cache-archiver', async () => (await import('./helpers.js')).cacheArchiverCommand],
];

/** Other names of commands: GitLab Runner's, where it calls one differently. */
export const COMMAND_ALIASES: Readonly<Record<string, string>> = { 'run-single': 'run-once' };

/** The commands GitLab Runner 19 does not have (the others are its commands, under its names). */
export const OWN_COMMANDS: readonly string[] = ['serve', 'run-once', 'demo', 'exec'];

/** Every name a command can be called by. */
export const COMMAND_NAMES: readonly string[] = [...loaders.map(([name]) => name), ...Object.keys(COMMAND_ALIASES)];

/** The command modules needed to run the command called `word`: that one, or (for --help) all of them. */
export async function loadCommands(word: string | undefined): Promise<AnyCommand[]> {
  const name = word === undefined ? undefined : (COMMAND_ALIASES[word] ?? word);
  const named = loaders.find(([n]) => n === name);
  const wanted = named ? [named] : loaders;
  return Promise.all(wanted.map(([, load]) => load()));
}
