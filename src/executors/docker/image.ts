/**
 * Which image a job runs in, whether the runner allows it, and getting it per the pull policy list
 * (tried in order, as GitLab Runner 15+). A pull's progress reaches the trace as a few lines: the
 * per-layer lines the CLI prints are counted, not copied.
 */
import picomatch from 'picomatch';
import { expandString } from '../../util/expand.js';
import type { ExportedVariable } from '../types.js';
import { ExecutorSetupError } from '../types.js';
import type { DockerCli } from './cli.js';
import type { ImageCache, LocalImage } from './image-cache.js';

export type { LocalImage };
import type { PullPolicy } from './options.js';

/** Expands `$VAR`/`${VAR}` in an image or service name against the job's variables. */
export function expandName(name: string, variables: readonly ExportedVariable[]): string {
  const lookup = (key: string): string => variables.findLast((v) => v.key === key)?.value ?? '';
  return expandString(name, lookup).trim();
}

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

/** GitLab Runner semantics: an empty list allows anything; otherwise one glob must match. */
export function checkAllowed(image: string, allowed: readonly string[], listName: 'allowed_images' | 'allowed_services', what: string, table = '[runners.docker]'): void {
  if (allowed.length === 0) return;
  if (allowed.some((glob) => picomatch.isMatch(image, glob, { dot: true }))) return;
  throw new ExecutorSetupError('IMAGE_NOT_ALLOWED', `the ${what} "${image}" is not allowed by ${table} ${listName} (${allowed.map((g) => `"${g}"`).join(', ')})`);
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
      tried.push(`pull_policy = ${policy}: pull failed: ${(error as Error).message}`);
    }
  }
  throw new ExecutorSetupError('IMAGE_UNAVAILABLE', `could not get image "${image}": ${tried.join('; ')}`);
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

/**
 * The pull policies for a job's image or service: its own (v4's `pull_policy`) when every one of them
 * is among the runner's (`[runners.docker] pull_policy`, which lists what the runner allows, as
 * GitLab Runner's `allowed_pull_policies` defaults to), else the job fails saying so; the runner's
 * when the job names none.
 */
export function pullPolicies(runner: readonly PullPolicy[], job: readonly PullPolicy[] | undefined, what: string): readonly PullPolicy[] {
  if (!job || job.length === 0) return runner;
  const allowed = runner.length > 0 ? runner : ['always'];
  const refused = job.filter((policy) => !allowed.includes(policy));
  if (refused.length > 0) {
    throw new ExecutorSetupError('PULL_POLICY_NOT_ALLOWED', `the ${what}'s pull_policy ${refused.join(', ')} is not allowed by [runners.docker] pull_policy (${allowed.join(', ')})`);
  }
  return job;
}
