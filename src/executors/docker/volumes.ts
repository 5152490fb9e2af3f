/**
 * `[runners.docker] volumes` as GitLab Runner 19 mounts them. A `/host:/ctr` bind or a `name:/ctr`
 * volume is passed on as written. A container path alone (`/cache`, what GitLab Runner's `register`
 * writes) is a cache volume of the project: a docker volume named after the runner, the project and
 * the slot, kept from job to job; under `cache_dir` a host directory instead; with `disable_cache` a
 * volume of this job alone, removed with it (unless `volume_keep`). Volumes made here carry
 * `volume_driver`, `volume_driver_ops` and the runner's labels.
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import type { DockerCli } from './cli.js';
import { LABEL_PREFIX, runnerLabel } from './labels.js';
import type { DockerOptions } from './options.js';

/** The label of the volumes of one job (`disable_cache`), which the leftover sweep removes. */
export const TEMPORARY_VOLUME_LABEL = `${LABEL_PREFIX}.volume=temporary`;

export interface JobVolumes {
  /** `--volume` values for the job's containers. */
  binds: string[];
  /** Volumes of this job alone, for cleanup. */
  temporary: string[];
}

export interface VolumeContext {
  runnerToken: string;
  projectId: number;
  slot: number;
  /** The job's container name prefix: its own volumes are named after it. */
  prefix: string;
  signal: AbortSignal;
}

/** The container path of a volume given as a container path alone, else undefined. */
export function containerPathOnly(volume: string): string | undefined {
  const [first = '', second] = volume.split(':');
  return second === undefined || !second.startsWith('/') ? first : undefined;
}

/** GitLab Runner's stable name for one project's cache volumes on one runner and slot. */
function projectUniqueName(context: VolumeContext): string {
  return `ci-runner-${createHash('sha256').update(`${context.runnerToken}-${context.projectId}-${context.slot}`).digest('hex').slice(0, 32)}`;
}

const hashPath = (path: string): string => createHash('md5').update(path).digest('hex');

/** Resolves `o.volumes` for one job, creating the docker volumes it needs. */
export async function jobVolumes(docker: DockerCli, o: DockerOptions, context: VolumeContext): Promise<JobVolumes> {
  const binds: string[] = [];
  const temporary: string[] = [];
  for (const volume of o.volumes) {
    const path = containerPathOnly(volume);
    if (path === undefined) {
      binds.push(volume);
      continue;
    }
    const mode = volume.slice(path.length);
    if (!o.disable_cache && o.cache_dir) {
      binds.push(`${join(o.cache_dir, projectUniqueName(context), hashPath(path))}:${path}${mode}`);
      continue;
    }
    const reusable = !o.disable_cache;
    const name = `${reusable ? projectUniqueName(context) : context.prefix}-cache-${hashPath(path)}`;
    const labels = [`${LABEL_PREFIX}.runner=${runnerLabel(context.runnerToken)}`, reusable ? `${LABEL_PREFIX}.volume=cache` : TEMPORARY_VOLUME_LABEL, `${LABEL_PREFIX}.destination=${path}`];
    const options = [...(o.volume_driver ? [`--driver=${o.volume_driver}`] : []), ...Object.entries(o.volume_driver_ops).map(([k, v]) => `--opt=${k}=${v}`)];
    await docker.run(['volume', 'create', ...labels.map((label) => `--label=${label}`), ...options, name], { signal: context.signal });
    if (!reusable) temporary.push(name);
    binds.push(`${name}:${path}${mode}`);
  }
  return { binds, temporary };
}
