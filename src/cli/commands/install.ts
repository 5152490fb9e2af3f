/**
 * `ci-runner install` / `uninstall`: the systemd unit, rendered from the one template
 * (src/service/unit.ts) with the absolute paths of the node and CLI running this command.
 */
import { mkdir, realpath, rm, stat, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { ArgumentsCamelCase, Argv, CommandModule } from 'yargs';
import { CommandError, EXIT } from '../support.js';
import { loadConfigWithWarnings } from '../../agent/config-read.js';
import { resolveConfigPath } from '../../agent/config/index.js';
import { lookupUser } from '../../executors/run-as.js';
import { requireSystemd, SYSTEM_UNIT_DIR, systemctl } from '../../service/systemd.js';
import { renderUnit, stopTimeoutFor } from '../../service/unit.js';
import { packageRoot } from '../../util/package-root.js';
import { SERVICE_EXIT_NOTE, serviceOf, withServiceOption, type ServiceArgs } from './service-options.js';

interface InstallArgs extends ServiceArgs {
  config?: string;
  'working-directory'?: string;
  user?: string;
  'unit-dir'?: string;
  syslog?: boolean;
  'init-user'?: string;
}

const UNIT_DIR_HELP = 'Only write the unit file into this directory; systemd is not touched (packaging, tests)';

export const installCommand: CommandModule<object, InstallArgs> = {
  command: 'install',
  describe: 'Install the daemon as a systemd service (writes the unit, reloads systemd, enables it)',
  builder: (y: Argv) =>
    withServiceOption(y)
      .option('config', { alias: 'c', type: 'string', describe: 'Config file the service runs with [env: CONFIG_FILE] (default: /etc/ci-runner/config.toml as root)' })
      .option('working-directory', { alias: 'd', type: 'string', describe: 'The daemon\'s working directory (default: /var/lib/<service>, created by systemd)' })
      .option('user', { alias: 'u', type: 'string', describe: 'Run shell jobs as this user (the daemon stays root)' })
      .option('unit-dir', { type: 'string', describe: UNIT_DIR_HELP })
      .option('syslog', { type: 'boolean', describe: 'Add --syslog to the service\'s run command (under systemd the log reaches the journal either way)' })
      .option('init-user', { alias: 'i', type: 'string', describe: "GitLab Runner's user for the daemon itself (refused: the daemon runs as root; jobs run as --user)" })
      .epilogue(`Start it with \`ci-runner start\`. TimeoutStopSec is shutdown_timeout + 60 s (at least 120 s), read from the config when it exists.\nExit codes: 0 installed; 1 already installed or systemctl failed; 2 bad usage, an invalid config or an unknown user.\n${SERVICE_EXIT_NOTE}`) as unknown as Argv<InstallArgs>,
  handler: async (argv: ArgumentsCamelCase<InstallArgs>) => {
    const service = serviceOf(argv);
    if (argv['init-user'] !== undefined) throw new CommandError(EXIT.usage, '--init-user: the daemon runs as root (it switches to the job user, reaches the docker engine and owns job cgroups); give --user to run shell jobs as that user');
    const unitDir = argv['unit-dir'] ? resolve(argv['unit-dir']) : SYSTEM_UNIT_DIR;
    if (!argv['unit-dir']) await requireSystemd();
    const config = resolveConfigPath(argv.config);
    if (argv.user) await lookupUser(argv.user);
    const unitPath = join(unitDir, `${service}.service`);
    if (await exists(unitPath)) throw new CommandError(EXIT.jobFailed, `${unitPath} already exists; run \`ci-runner uninstall --service ${service}\` first`);
    const text = renderUnit({
      service,
      node: process.execPath,
      cli: await realpath(join(packageRoot(), 'dist', 'cli', 'main.js')),
      config,
      workingDirectory: resolve(argv['working-directory'] ?? `/var/lib/${service}`),
      ...(argv.user ? { user: argv.user } : {}),
      ...(argv.syslog ? { syslog: true } : {}),
      timeoutStopSec: stopTimeoutFor(await shutdownTimeout(config)),
    });
    try {
      await mkdir(unitDir, { recursive: true });
      await writeFile(unitPath, text, { mode: 0o644 });
    } catch (error) {
      throw new CommandError(EXIT.jobFailed, `cannot write ${unitPath}: ${(error as Error).message}${(error as NodeJS.ErrnoException).code === 'EACCES' ? ' (run install as root)' : ''}`);
    }
    process.stdout.write(`${service}: wrote ${unitPath}\n`);
    if (argv['unit-dir']) return;
    await systemctl(['daemon-reload']);
    await systemctl(['enable', `${service}.service`]);
    process.stdout.write(`${service}: enabled; start it with \`ci-runner start --service ${service}\`\n`);
  },
};

export const uninstallCommand: CommandModule<object, InstallArgs> = {
  command: 'uninstall',
  describe: 'Stop, disable and remove the systemd service',
  builder: (y: Argv) =>
    withServiceOption(y)
      .option('unit-dir', { type: 'string', describe: 'Only remove the unit file from this directory; systemd is not touched' })
      .epilogue(`Exit codes: 0 removed; 1 not installed or systemctl failed.\n${SERVICE_EXIT_NOTE}`) as unknown as Argv<InstallArgs>,
  handler: async (argv: ArgumentsCamelCase<InstallArgs>) => {
    const service = serviceOf(argv);
    const unitPath = join(argv['unit-dir'] ? resolve(argv['unit-dir']) : SYSTEM_UNIT_DIR, `${service}.service`);
    if (!argv['unit-dir']) await requireSystemd();
    if (!(await exists(unitPath))) throw new CommandError(EXIT.jobFailed, `${unitPath} does not exist; nothing to uninstall`);
    if (!argv['unit-dir']) await systemctl(['disable', '--now', `${service}.service`]);
    await rm(unitPath);
    if (!argv['unit-dir']) await systemctl(['daemon-reload']);
    process.stdout.write(`${service}: removed ${unitPath}\n`);
  },
};

async function exists(path: string): Promise<boolean> {
  return stat(path).then(() => true, () => false);
}

/** shutdown_timeout of the config, or the default when the file does not exist yet (register comes later). */
async function shutdownTimeout(config: string): Promise<number> {
  if (!(await exists(config))) {
    process.stderr.write(`WARNING: ${config} does not exist yet; create it with \`ci-runner register --config ${config}\` before starting the service\n`);
    return 30;
  }
  return (await loadConfigWithWarnings(config)).config.shutdown_timeout;
}
