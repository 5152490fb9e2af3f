/**
 * Which image a job runs in, whether the runner allows it, and getting it per the pull policy list
 * (tried in order, as GitLab Runner 15+). A pull's progress reaches the trace as a few lines: the
 * per-layer lines the CLI prints are counted, not copied.
 */
import { expandName } from '../common/image-name.js';
import type { ExportedVariable } from '../types.js';
import { classifyPullFailure } from '../common/pull-failure.js';
import { ExecutorSetupError } from '../types.js';
import type { DockerCli } from './cli.js';
import type { ImageCache, LocalImage } from './image-cache.js';

export type { LocalImage };
import type { PullPolicy } from './options.js';

/** The job's image (`options.image`, expanded), else the runner's default; neither fails the job. */
export function selectImage(jobImage: string | undefined, runnerImage: string | undefined, variables: readonly ExportedVariable[]): string {
  const fromJob = jobImage ? expandName(jobImage, variables) : '';
  const image = fromJob || runnerImage || '';
  if (!image) throw new ExecutorSetupError('NO_IMAGE', 'no image: the job names none and [runners.docker] image is not set');
  checkImageName(image, 'image');
  return image;
}

/**
 * An image name the job gave goes on docker's command line where an option could stand: one that
 * starts with `-` (`--volume=/:/host`) would be read as one.
 */
export function checkImageName(name: string, what: 'image' | 'service'): void {
  if (/\s/.test(name) || name.startsWith('-')) throw new ExecutorSetupError('BAD_IMAGE', `invalid ${what} name "${name}"`);
}

export interface EnsureOptions {
  log: (line: string) => void;
  signal: AbortSignal;
  /** For the pull only: the job's registry logins (`DOCKER_CONFIG`, registry-auth.ts). */
  env?: Record<string, string>;
  /** The daemon's inspected images (image-cache.ts); without it every call inspects. */
  cache?: ImageCache;
  /** The job's `docker: platform`, for the pull. */
  platform?: string;
}

/** The image once it is present per `policies`; fails saying what each policy found. */
export async function ensureImage(docker: DockerCli, image: string, policies: readonly PullPolicy[], options: EnsureOptions): Promise<LocalImage> {
  const tried: string[] = [];
  let lastPull: string | undefined;
  const { cache } = options;
  for (const policy of policies.length > 0 ? policies : (['always'] as const)) {
    if (policy !== 'always') {
      const cached = cache?.get(docker.engine, image);
      if (cached) return cached;
      const found = await localImage(docker, image, options.signal);
      if (found) {
        cache?.set(docker.engine, image, found);
        return found;
      }
      if (policy === 'never') {
        tried.push('not present locally and pull_policy = never');
        continue;
      }
    }
    try {
      // A pull may move the tag to another image: what was cached of it is stale from here on.
      cache?.forget(docker.engine, image);
      await pull(docker, image, options);
      const found = await localImage(docker, image, options.signal);
      if (found) {
        cache?.set(docker.engine, image, found);
        return found;
      }
      tried.push(`pull_policy = ${policy}: pulled but not found afterwards`);
    } catch (error) {
      options.signal.throwIfAborted();
      lastPull = (error as Error).message;
      tried.push(`pull_policy = ${policy}: pull failed: ${lastPull}`);
    }
  }
  // GitLab Runner tells the last pull's error apart: the registry out of reach, the image missing or denied.
  const reason = lastPull === undefined ? 'image_pull_failure' : classifyPullFailure(lastPull);
  throw new ExecutorSetupError('IMAGE_UNAVAILABLE', `could not get image "${image}": ${tried.join('; ')}`, { reason });
}

async function localImage(docker: DockerCli, image: string, signal: AbortSignal): Promise<LocalImage | undefined> {
  let text: string;
  try {
    text = await docker.run(['image', 'inspect', '--format', '{{json .Id}} {{json .Config.User}} {{json .Config.Entrypoint}}', image], { signal });
  } catch {
    signal.throwIfAborted();
    return undefined;
  }
  // The ID's and the user's JSON have no space in them; the entrypoint's may.
  const first = text.indexOf(' ');
  const second = text.indexOf(' ', first + 1);
  if (first < 0 || second < 0) return undefined;
  const id = JSON.parse(text.slice(0, first)) as unknown;
  const user = JSON.parse(text.slice(first + 1, second)) as unknown;
  const entrypoint = JSON.parse(text.slice(second + 1)) as unknown;
  if (typeof id !== 'string' || id === '') return undefined;
  return {
    id,
    user: typeof user === 'string' ? user : '',
    entrypoint: Array.isArray(entrypoint) ? entrypoint.filter((item): item is string => typeof item === 'string') : [],
  };
}

async function pull(docker: DockerCli, image: string, options: EnsureOptions): Promise<void> {
  options.log(`Pulling docker image ${image} ...`);
  const child = docker.spawn(['pull', ...(options.platform ? ['--platform', options.platform] : []), image], { signal: options.signal, ...(options.env ? { env: options.env } : {}) });
  const layers = new Set<string>();
  let pending = '';
  let lastError = '';
  const onData = (chunk: Buffer): void => {
    pending += chunk.toString('utf8');
    const lines = pending.split(/\r?\n/);
    pending = lines.pop() ?? '';
    for (const line of lines.map((l) => l.trim()).filter(Boolean)) {
      const layer = /^([0-9a-f]{12}): /.exec(line);
      if (layer?.[1]) layers.add(layer[1]);
      else if (/^(Digest|Status):/.test(line)) options.log(line);
      else lastError = line;
    }
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  const result = await child;
  options.signal.throwIfAborted();
  if (result.exitCode !== 0) throw new Error((pending.trim() || lastError || `exit status ${result.exitCode}`).slice(0, 500));
  if (layers.size > 0) options.log(`Pulled ${layers.size} layer${layers.size === 1 ? '' : 's'}`);
}
