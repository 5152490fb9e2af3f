/**
 * What the docker executor reads from a runner's `[runners.docker]` table, after the config schema
 * has validated and normalised it. Property names are GitLab Runner's TOML keys, so a key in the file,
 * its schema entry and its use here cannot drift apart.
 */

export type PullPolicy = 'always' | 'if-not-present' | 'never';

/** A service as GitLab writes it: a string is `{ name }`. */
export interface ServiceSpec {
  name: string;
  alias?: string;
  entrypoint?: string[];
  command?: string[];
}

export interface DockerOptions {
  /** Default image when the job names none. */
  image?: string;
  /** Tried in order; a single string in the file becomes a one-element list. Default `['always']`. */
  pull_policy: PullPolicy[];
  /** Glob lists (GitLab Runner semantics); empty = anything allowed. */
  allowed_images: string[];
  allowed_services: string[];
  /** Services every job of this runner gets, before the job's own. */
  services: ServiceSpec[];
  /** Seconds to wait for services' ports; default 30, -1 disables the wait. */
  wait_for_services_timeout: number;
  privileged: boolean;
  /** Build stages run as this user instead of the image's USER (GitLab Runner's `user`). */
  user?: string;
  /** Ignore a job's `image:entrypoint`: the image's own always runs. */
  disable_entrypoint_overwrite: boolean;
  /** `/host:/ctr[:ro|:rw]` binds or `/ctr` anonymous volumes. */
  volumes: string[];
  network_mode?: string;
  /** Docker size strings as the CLI takes them (`512m`, `2g`). */
  memory?: string;
  memory_swap?: string;
  /** CPUs as the CLI takes them (`1.5`). */
  cpus?: string;
  /** Bytes. */
  shm_size?: number;
  dns: string[];
  extra_hosts: string[];
  cap_add: string[];
  cap_drop: string[];
  devices: string[];
  /** Container path → mount options (`rw,size=64m`). */
  tmpfs: Record<string, string>;
  /** DOCKER_HOST for the CLI (`unix:///…`, `tcp://…`). */
  host?: string;
  disable_cache: boolean;
  /** Ours: the docker-compatible CLI to call (default `docker`; e.g. `podman`). */
  cli: string;
}
