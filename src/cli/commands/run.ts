/**
 * `ci-runner run`: the daemon over every `[[runners]]` entry of config.toml. SIGTERM/SIGINT/SIGQUIT
 * stop polling and let jobs finish for `shutdown_timeout`; a second SIGTERM/SIGINT cancels them at
 * once; SIGHUP re-reads the config (a bad new config is reported and the old one kept).
 */
import type { ArgumentsCamelCase, Argv, CommandModule } from 'yargs';
import { handleStopSignals, loadConfigWithWarnings } from '../../agent/cli-support.js';
import { resolveConfigPath } from '../../agent/config/index.js';
import { keepRunningOnUnhandledRejection } from '../../agent/last-resort.js';
import { checkCanSwitchTo, lookupUser, type RunAs } from '../../agent/run-as.js';

interface RunArgs {
  config?: string;
  'working-directory'?: string;
  user?: string;
}

export const runCommand: CommandModule<object, RunArgs> = {
  command: 'run',
  describe: 'Run the runner daemon for every runner in config.toml',
  builder: (y: Argv) =>
    y
      .option('config', { alias: 'c', type: 'string', describe: 'Config file [env: CONFIG_FILE] (default: /etc/ci-runner/config.toml as root, ~/.ci-runner/config.toml otherwise)' })
      .option('working-directory', { alias: 'd', type: 'string', describe: 'Change to this directory first (relative builds_dir/cache_dir resolve against it)' })
      .option('user', { alias: 'u', type: 'string', describe: 'Run shell jobs as this user (overrides config.toml `user`); the daemon stays root' })
      .epilogue('Signals: SIGTERM/SIGINT/SIGQUIT finish running jobs (up to shutdown_timeout), a second SIGTERM/SIGINT cancels them; SIGHUP reloads the config.\nExit codes: 0 stopped cleanly; 2 the config is missing or invalid, or the job user does not exist.') as unknown as Argv<RunArgs>,
  handler: async (argv: ArgumentsCamelCase<RunArgs>) => {
    if (argv['working-directory']) process.chdir(argv['working-directory']);
    const configPath = resolveConfigPath(argv.config);
    const loaded = await loadConfigWithWarnings(configPath);
    // Loaded here, not at the top: `--help` and the other commands should not pay for the daemon.
    const [{ Agent }, { defaultServices }, { createLogger }] = await Promise.all([
      import('../../agent/agent.js'),
      import('../../agent/services.js'),
      import('../../log.js'),
    ]);
    const logger = createLogger({ level: loaded.config.log_level === 'panic' ? 'fatal' : loaded.config.log_level, format: loaded.config.log_format });
    keepRunningOnUnhandledRejection(logger);
    const agent = new Agent(loaded.config, defaultServices(logger, await jobUser(argv.user ?? loaded.config.user)));
    const signals = handleStopSignals(logger, () => agent.shutdown(), () => agent.shutdown());
    const onHup = (): void => {
      loadConfigWithWarnings(configPath)
        .then((next) => agent.reload(next.config))
        .catch((error: unknown) => logger.error({ err: (error as Error).message }, 'SIGHUP: the new config is invalid; keeping the old one'));
    };
    process.on('SIGHUP', onHup);
    logger.info({ config: configPath, pid: process.pid }, 'ci-runner started');
    agent.start();
    try {
      await agent.done();
    } finally {
      process.off('SIGHUP', onHup);
      signals.dispose();
    }
    logger.info('ci-runner stopped');
  },
};

/** The job user, looked up once at start (a change of `user` needs a restart): an unknown one is exit 2. */
async function jobUser(name: string | undefined): Promise<RunAs | undefined> {
  if (name === undefined) return undefined;
  const runAs = await lookupUser(name);
  checkCanSwitchTo(runAs);
  return runAs;
}
