/**
 * `ci-runner run`: the daemon over every `[[runners]]` entry of config.toml. SIGQUIT stops it
 * gracefully (running jobs finish); SIGTERM/SIGINT abort running jobs and wait `shutdown_timeout`
 * for their final updates (cli/stop-signals.ts). SIGHUP, or any change of the config file, re-reads
 * the config (a bad new config is reported and the old one kept).
 */
import type { ArgumentsCamelCase, Argv, CommandModule } from 'yargs';
import { CommandError, EXIT } from '../support.js';
import { handleStopSignals } from '../stop-signals.js';
import { loadConfigWithWarnings } from '../../agent/config-read.js';
import { resolveConfigPath } from '../../agent/config/index.js';
import { keepDaemonRunning } from '../last-resort.js';
import { checkCanSwitchTo, lookupUser, type RunAs } from '../../executors/run-as.js';
import { parseListenAddress } from '../../agent/config/listen-address.js';
import { addEnvOptions, resolveEnvOptions, type EnvFlag } from '../env-options.js';
import { requestedLogLevel } from '../global-options.js';
import { honoured } from '../../util/compat.js';
import { stderrIsJournal } from '../../log/index.js';

interface RunArgs {
  config?: string;
  'working-directory'?: string;
  user?: string;
  'listen-address'?: string;
  service?: string;
  syslog?: boolean;
}

/** `run`'s flags, as GitLab Runner's `run` has them. */
const RUN_FLAGS: readonly EnvFlag[] = [
  { flag: 'config', alias: 'c', env: ['CONFIG_FILE'], kind: 'string', describe: 'Config file (default: /etc/ci-runner/config.toml as root, ~/.ci-runner/config.toml otherwise)' },
  { flag: 'working-directory', alias: 'd', env: [], kind: 'string', describe: 'Change to this directory first (relative builds_dir/cache_dir resolve against it)' },
  { flag: 'user', alias: 'u', env: [], kind: 'string', describe: 'Run shell jobs as this user (overrides config.toml `user`); the daemon stays root' },
  { flag: 'listen-address', env: ['LISTEN_ADDRESS'], kind: 'string', describe: 'Serve /metrics, /health/ready, /healthz, /readyz, /debug/jobs/list and /debug/jobs on host:port (overrides listen_address in the config)' },
  // GitLab Runner's service files run `run --working-directory D --config C --service gitlab-runner --syslog`.
  { flag: 'service', alias: 'n', env: [], kind: 'string', describe: 'The service name this daemon runs as (logged at start; GitLab Runner names its system-log source after it)', support: honoured('logged at start as `service`') },
  { flag: 'syslog', env: ['LOG_SYSLOG'], kind: 'boolean', describe: 'Log to the system log', support: honoured('under systemd the log goes to the journal (standard error, each line with its syslog priority); elsewhere a warning says the log stays on standard error') },
];

export const runCommand: CommandModule<object, RunArgs> = {
  command: 'run',
  describe: 'Run the runner daemon for every runner in config.toml',
  builder: (y: Argv) =>
    addEnvOptions(y, RUN_FLAGS)
      .epilogue('Signals (as GitLab Runner): SIGQUIT stops taking jobs and lets running ones finish; SIGTERM/SIGINT abort running jobs at once (reported failed, runner_interrupted) and wait up to shutdown_timeout for their final updates; a further signal meanwhile exits at once. SIGHUP reloads the config. The config file is also watched: a change is applied within a second (an invalid file is logged and the old config kept).\nExit codes: 0 stopped cleanly; 1 a forceful stop did not finish within shutdown_timeout, or a further signal cut it short; 2 the config is missing, invalid or writable by every user, a bad flag, or the job user does not exist.') as unknown as Argv<RunArgs>,
  handler: async (argv: ArgumentsCamelCase<RunArgs>) => {
    const listenAddress = argv['listen-address'] ?? (process.env.LISTEN_ADDRESS || undefined);
    if (listenAddress !== undefined && !parseListenAddress(listenAddress)) {
      throw new CommandError(EXIT.usage, `--listen-address: "${listenAddress}" is not host:port (such as 127.0.0.1:9252 or :9252)`);
    }
    // SIGHUP's default action ends the process: until the daemon can reload, one is only noted.
    let earlyHup = false;
    const noteHup = (): void => {
      earlyHup = true;
    };
    process.on('SIGHUP', noteHup);
    if (argv['working-directory']) process.chdir(argv['working-directory']);
    const configPath = resolveConfigPath(argv.config);
    const loaded = await loadConfigWithWarnings(configPath, { permissions: 'refuse' });
    // Loaded here, not at the top: `--help` and the other commands should not pay for the daemon.
    const { Daemon } = await import('../../agent/daemon.js');
    const runAs = await jobUser(argv.user ?? loaded.config.user);
    const logLevel = requestedLogLevel(argv);
    const { loadSystemId } = await import('../../agent/config/system-id.js');
    const systemId = await loadSystemId(configPath);
    const daemon = new Daemon({ configPath, config: loaded.config, systemId: systemId.id, ...(logLevel ? { logLevel } : {}), ...(listenAddress !== undefined ? { listenAddress } : {}), ...(runAs ? { runAs } : {}) });
    const logger = daemon.log;
    if (systemId.unsaved) logger.warn(`system id: ${systemId.unsaved}`);
    keepDaemonRunning(logger);
    const signals = handleStopSignals(
      logger,
      { graceful: (signal) => daemon.stop('graceful', signal), forceful: (signal) => daemon.stop('forceful', signal) },
      () => daemon.shutdownTimeoutMs,
    );
    const onHup = (): void => void daemon.reload('SIGHUP');
    process.off('SIGHUP', noteHup);
    process.on('SIGHUP', onHup);
    if (resolveEnvOptions(argv, RUN_FLAGS).syslog === true && !stderrIsJournal()) logger.warn('--syslog: ci-runner does not write to syslog; its log stays on standard error (under systemd it reaches the journal with syslog priorities)');
    logger.info({ config: configPath, pid: process.pid, system_id: systemId.id, ...(argv.service ? { service: argv.service } : {}) }, 'ci-runner started');
    await daemon.start();
    if (earlyHup) onHup();
    let gaveUp: string | undefined;
    try {
      gaveUp = await Promise.race([daemon.agent.done().then(() => undefined), signals.forcedExit]);
    } finally {
      process.off('SIGHUP', onHup);
      signals.dispose();
    }
    if (gaveUp !== undefined) {
      // As GitLab Runner: exit 1 without waiting for the rest; owed final updates go at the next start.
      daemon.log.error({ jobs: daemon.agent.runningJobs }, `forceful shutdown not finished: ${gaveUp}`);
      process.exit(EXIT.jobFailed);
    }
    await daemon.close();
    daemon.log.info('ci-runner stopped');
  },
};

/** The job user, looked up once at start (a change of `user` needs a restart): an unknown one is exit 2. */
async function jobUser(name: string | undefined): Promise<RunAs | undefined> {
  if (name === undefined) return undefined;
  const runAs = await lookupUser(name);
  checkCanSwitchTo(runAs);
  return runAs;
}
