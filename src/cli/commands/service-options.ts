/** Options shared by the service commands (`install`, `uninstall`, `start`, `stop`, `restart`, `status`). */
import type { Argv } from 'yargs';
import { CommandError, EXIT } from '../support.js';
import { validServiceName } from '../../service/unit.js';

export interface ServiceArgs {
  service: string;
}

export const SERVICE_EXIT_NOTE = 'Without systemd (no systemctl, or the machine was not booted with it) every service command says so and exits 69.';

/** Adds `--service`/`-n`. */
export function withServiceOption<T>(y: Argv<T>): Argv<T & ServiceArgs> {
  return y.option('service', { alias: 'n', type: 'string', default: 'ci-runner', describe: 'Name of the systemd service' }) as unknown as Argv<T & ServiceArgs>;
}

/** The service name, checked: it becomes a file name under the unit directory. */
export function serviceName(name: string): string {
  const bare = name.endsWith('.service') ? name.slice(0, -'.service'.length) : name;
  if (!validServiceName(bare)) throw new CommandError(EXIT.usage, `--service "${name}" is not a valid systemd unit name (letters, digits, ":", "_", ".", "-")`);
  return bare;
}
