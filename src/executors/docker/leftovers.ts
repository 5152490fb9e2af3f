/**
 * What a previous process of the same runner entry left in docker (it was SIGKILLed, or the machine
 * lost power mid-job): containers and networks carrying the entry's label. The agent removes them at
 * start, before the entry takes jobs, so none of this process's jobs can be among them.
 */
import { DockerCli } from './cli.js';
import { runnerFilter } from './labels.js';
import { TEMPORARY_VOLUME_LABEL } from './volumes.js';
import type { DockerOptions } from './options.js';

export interface Leftovers {
  containers: number;
  networks: number;
  /** Volumes of one job (`disable_cache`), never the project's cache volumes. */
  volumes: number;
}

/** Removes the entry's labelled containers (with their anonymous volumes), then its networks and its jobs' own volumes. */
export async function removeDockerLeftovers(options: Pick<DockerOptions, 'cli' | 'host' | 'tls_verify' | 'tls_cert_path'>, runnerToken: string, signal: AbortSignal): Promise<Leftovers> {
  const docker = new DockerCli({ cli: options.cli, ...(options.host ? { host: options.host } : {}), tlsVerify: options.tls_verify, ...(options.tls_cert_path ? { certPath: options.tls_cert_path } : {}) });
  const filter = runnerFilter(runnerToken);
  const containers = (await docker.run(['ps', '--all', '--quiet', '--filter', filter], { signal })).split('\n').filter(Boolean);
  if (containers.length > 0) await docker.run(['rm', '--force', '--volumes', ...containers], { signal });
  const networks = (await docker.run(['network', 'ls', '--quiet', '--filter', filter], { signal })).split('\n').filter(Boolean);
  if (networks.length > 0) await docker.run(['network', 'rm', ...networks], { signal });
  const volumes = (await docker.run(['volume', 'ls', '--quiet', '--filter', filter, '--filter', `label=${TEMPORARY_VOLUME_LABEL}`], { signal })).split('\n').filter(Boolean);
  if (volumes.length > 0) await docker.run(['volume', 'rm', '--force', ...volumes], { signal });
  return { containers: containers.length, networks: networks.length, volumes: volumes.length };
}
