/**
 * What a previous process of the same runner entry left in docker (it was SIGKILLed, or the machine
 * lost power mid-job): containers and networks carrying the entry's label. The agent removes them at
 * start, before the entry takes jobs, so none of this process's jobs can be among them.
 */
import { DockerCli } from './cli.js';
import { runnerFilter } from './labels.js';
import type { DockerOptions } from './options.js';

export interface Leftovers {
  containers: number;
  networks: number;
}

/** Removes the entry's labelled containers (with their anonymous volumes), then its networks. */
export async function removeDockerLeftovers(options: Pick<DockerOptions, 'cli' | 'host'>, runnerToken: string, signal: AbortSignal): Promise<Leftovers> {
  const docker = new DockerCli({ cli: options.cli, ...(options.host ? { host: options.host } : {}) });
  const filter = runnerFilter(runnerToken);
  const containers = (await docker.run(['ps', '--all', '--quiet', '--filter', filter], { signal })).split('\n').filter(Boolean);
  if (containers.length > 0) await docker.run(['rm', '--force', '--volumes', ...containers], { signal });
  const networks = (await docker.run(['network', 'ls', '--quiet', '--filter', filter], { signal })).split('\n').filter(Boolean);
  if (networks.length > 0) await docker.run(['network', 'rm', ...networks], { signal });
  return { containers: containers.length, networks: networks.length };
}
