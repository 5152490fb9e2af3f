/**
 * This host's `system_id` (docs/protocol-v4.md §3), as GitLab Runner keeps it: in
 * `.runner_system_id` beside config.toml, made once and read back ever after. `s_` + 12 hex digits
 * derived from the machine id (`/etc/machine-id`) as GitLab Runner derives them, so the same host keeps
 * its id even when the file is lost, and has the id GitLab Runner would give it; `r_` + 12 random
 * letters and digits where no machine id can be read. `run-once` without a config file makes one for
 * the process (`uniqueSystemId`), as GitLab Runner's run-single does. When the file cannot
 * be written the id still serves this process (a warning says so), and the next start makes another.
 * A v4 server tells the managers of one runner token apart by it (`glrt-` runners shared by hosts).
 */
import { createHmac, randomInt } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { writeAtomic } from './write.js';

export const SYSTEM_ID_FILE = '.runner_system_id';

const VALID = /^[sr]_[0-9a-zA-Z]{12}$/;
const MACHINE_ID_FILES = ['/etc/machine-id', '/var/lib/dbus/machine-id'];
const ALPHANUMERIC = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

export interface SystemId {
  id: string;
  /** Where it is kept. */
  path: string;
  /** Set when the file could not be written: why (the id is this process's only). */
  unsaved?: string;
}

/** The system id kept beside `configPath`, made (and saved) when there is none or it is unreadable. */
export async function loadSystemId(configPath: string, machineIdFiles: readonly string[] = MACHINE_ID_FILES): Promise<SystemId> {
  const path = join(dirname(configPath), SYSTEM_ID_FILE);
  const kept = (await readFile(path, 'utf8').catch(() => '')).trim();
  if (VALID.test(kept)) return { id: kept, path };
  const id = await uniqueSystemId(machineIdFiles);
  try {
    await writeAtomic(path, `${id}\n`);
    return { id, path };
  } catch (error) {
    return { id, path, unsaved: `cannot write ${path} (${(error as Error).message}); this process uses ${id}, the next one another` };
  }
}

/** A system id not kept anywhere: derived from the machine id, else random. */
export async function uniqueSystemId(machineIdFiles: readonly string[] = MACHINE_ID_FILES): Promise<string> {
  return (await fromMachineId(machineIdFiles)) ?? randomId();
}

/**
 * `s_` + the first 12 hex digits of the HMAC-SHA256 keyed with the machine id of the text
 * `gitlab-runner` (GitLab Runner's derivation; never the machine id itself).
 */
async function fromMachineId(files: readonly string[]): Promise<string | undefined> {
  for (const file of files) {
    const machineId = (await readFile(file, 'utf8').catch(() => '')).trim();
    if (machineId !== '') return `s_${createHmac('sha256', machineId).update('gitlab-runner').digest('hex').slice(0, 12)}`;
  }
  return undefined;
}

function randomId(): string {
  return `r_${Array.from({ length: 12 }, () => ALPHANUMERIC[randomInt(ALPHANUMERIC.length)]).join('')}`;
}
