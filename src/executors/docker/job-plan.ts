/**
 * What a job may run under this runner's `[runners.docker]`, decided before anything is pulled or
 * started, as GitLab Runner 19 decides it: the image (`allowed_images`; the runner's own default image
 * is always allowed), the services (the runner's, then the job's, checked against `allowed_services`,
 * at most `services_limit`), the pull policies of each (`allowed_pull_policies`), whether each may run
 * privileged (`allowed_privileged_images`, `services_privileged`, `allowed_privileged_services`) and
 * the user (`allowed_users`). A refusal writes GitLab Runner's lines and fails the job.
 */

import picomatch from 'picomatch';
import type { BuildPayload, ServiceOptions } from '../../protocol/types.js';
import { effectivePullPolicies, privilegedAllowed, verifyAllowedImage, verifyAllowedUser, type PullPolicy } from '../common/image-policy.js';
import type { ExportedVariable } from '../types.js';
import { ExecutorSetupError } from '../types.js';
import { checkImageName, expandName, selectImage } from './image.js';
import type { DockerOptions, ServiceSpec } from './options.js';

export interface PlannedService extends ServiceSpec {
  policies: PullPolicy[];
  privileged: boolean;
  /** `services_devices` of the globs matching its image. */
  devices: string[];
}

export interface JobPlan {
  image: string;
  imagePolicies: PullPolicy[];
  /** Whether the build stages run privileged. */
  privileged: boolean;
  services: PlannedService[];
}

/** Decides the job's image and services; throws an ExecutorSetupError for what the runner refuses. */
export function planJob(o: DockerOptions, build: BuildPayload, variables: readonly ExportedVariable[], log: (line: string) => void): JobPlan {
  const image = selectImage(build.options.image, o.image, variables);
  verifyAllowedImage({ image, list: 'images', allowed: o.allowed_images, internal: o.image ? [o.image] : [], log });
  verifyAllowedUser(o.user, o.allowed_users, o.user);
  const own = o.services.map((s) => ({ ...s, name: expandName(s.name, variables) }));
  // v4 sends services as objects (alias, command, entrypoint, pull_policy); v1 by name.
  const specs: ServiceOptions[] = build.options.serviceSpecs ?? (build.options.services ?? []).map((name) => ({ name }));
  const jobs = specs.map((s) => ({ ...s, name: expandName(s.name, variables) }));
  for (const s of [...own, ...jobs]) checkImageName(s.name, 'service');
  for (const s of jobs) verifyAllowedImage({ image: s.name, list: 'services', allowed: o.allowed_services, internal: own.map((r) => r.name), log });
  const all: Array<ServiceSpec & { pull_policy?: PullPolicy[] }> = [...own, ...jobs];
  if (o.services_limit >= 0 && all.length > o.services_limit) {
    throw new ExecutorSetupError('TOO_MANY_SERVICES', `too many services requested: ${all.length}, only ${o.services_limit} allowed`);
  }
  const policiesOf = (name: string, job: PullPolicy[] | undefined): PullPolicy[] => effectivePullPolicies({ image: name, job, runner: o.pull_policy, allowed: o.allowed_pull_policies });
  const imagePolicies = policiesOf(image, build.options.imagePullPolicy);
  const servicesPrivileged = o.services_privileged ?? o.privileged;
  const services = all.map(({ pull_policy, ...spec }) => ({
    ...spec,
    policies: policiesOf(spec.name, pull_policy),
    privileged: servicesPrivileged && privilegedAllowed(spec.name, o.allowed_privileged_services),
    devices: Object.entries(o.services_devices).flatMap(([glob, devices]) => (picomatch.isMatch(spec.name, glob, { dot: true }) ? devices : [])),
  }));
  return { image, imagePolicies, privileged: o.privileged && privilegedAllowed(image, o.allowed_privileged_images), services };
}
