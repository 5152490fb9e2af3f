/** Options shared by the service commands (`install`, `uninstall`, `start`, `stop`, `restart`, `status`). */
import type { Argv } from 'yargs';
import { CommandError, EXIT } from '../support.js';
import { validServiceName } from '../../service/unit.js';

export interface ServiceArgs {
  service: string;
  'user-service'?: boolean;
}

export const SERVICE_EXIT_NOTE = 'Without systemd (no systemctl, or the machine was not booted with it) every service command says so and exits 69.';

const USER_SERVICE_REFUSED = '--user-service: systemd user services are not supported; the daemon runs as a system service (as root, jobs as --user)';

/** Adds `--service`/`-n`, and GitLab Runner's `--user-service` (refused: see serviceName). */
export function withServiceOption<T>(y: Argv<T>): Argv<T & ServiceArgs> {
  return y
    .option('service', { alias: 'n', type: 'string', default: 'ci-runner', describe: 'Name of the systemd service' })
    .option('user-service', { type: 'boolean', describe: "GitLab Runner's systemd user service (refused: system services only)" }) as unknown as Argv<T & ServiceArgs>;
}

/** The service name of the command's flags, checked (it becomes a file name under the unit directory). */
export function serviceOf(argv: ServiceArgs): string {
  if (argv['user-service'] === true) throw new CommandError(EXIT.usage, USER_SERVICE_REFUSED);
  return serviceName(argv.service);
}

/** The service name, checked: it becomes a file name under the unit directory. */
export function serviceName(name: string): string {
  const bare = name.endsWith('.service') ? name.slice(0, -'.service'.length) : name;
  if (!validServiceName(bare)) throw new CommandError(EXIT.usage, `--service "${name}" is not a valid systemd unit name (letters, digits, ":", "_", ".", "-")`);
  return bare;
}
