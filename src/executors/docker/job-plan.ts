/**
 * What a job may run under this runner's `[runners.docker]`, decided before anything is pulled or
 * started, as GitLab Runner 19 decides it: the image (`allowed_images`; the runner's own default image
 * is always allowed), the services (the runner's, then the job's, checked against `allowed_services`,
 * at most `services_limit`), the pull policies of each (`allowed_pull_policies`), whether each may run
 * privileged (`allowed_privileged_images`, `services_privileged`, `allowed_privileged_services`), the
 * user of the build (`user`, else the job's `image: docker: user`, within `allowed_users`) and each
 * one's `docker: { user, platform }` and own variables. A refusal writes GitLab Runner's lines and fails the job.
 */
import picomatch from 'picomatch';
import type { BuildPayload, ServiceOptions } from '../../protocol/types.js';
import { effectivePullPolicies, privilegedAllowed, verifyAllowedImage, verifyAllowedUser, type PullPolicy } from '../common/image-policy.js';
import { dockerOpts } from '../common/executor-opts.js';
import { serviceOwnVariables } from '../common/service-variables.js';
import type { ExportedVariable } from '../types.js';
import { ExecutorSetupError } from '../types.js';
import { expandName } from '../common/image-name.js';
import { checkImageName, selectImage } from './image.js';
import type { DockerOptions, ServiceSpec } from './options.js';
import { environmentVariables } from './services.js';

export interface PlannedService extends ServiceSpec {
  policies: PullPolicy[];
  privileged: boolean;
  /** `services_devices` of the globs matching its image. */
  devices: string[];
  /** Its own variables (the runner's `environment`, the job's `variables:`), expanded against the job's. */
  variables: ExportedVariable[];
  user?: string;
  platform?: string;
}

export interface JobPlan {
  image: string;
  imagePolicies: PullPolicy[];
  /** Whether the build stages run privileged. */
  privileged: boolean;
  /** Whom the build stages run as, when the runner or the job says (else the image's USER). */
  user?: string;
  platform?: string;
  services: PlannedService[];
}

type AnyService = ServiceSpec & Partial<Pick<ServiceOptions, 'pull_policy' | 'variables' | 'executor_opts'>>;

/** Decides the job's image and services; throws an ExecutorSetupError for what the runner refuses. */
export function planJob(o: DockerOptions, build: BuildPayload, variables: readonly ExportedVariable[], log: (line: string) => void): JobPlan {
  const image = selectImage(build.options.image, o.image, variables);
  verifyAllowedImage({ image, list: 'images', allowed: o.allowed_images, internal: o.image ? [o.image] : [], log });
  // The job's `docker: { user, platform }`; the runner's `user` wins, as in GitLab Runner.
  const imageOpts = dockerOpts(build.options.imageExecutorOpts, variables, 'image');
  const user = o.user ?? imageOpts.user;
  verifyAllowedUser(user, o.allowed_users, o.user);
  const own = o.services.map((s): AnyService => ({ ...s, name: expandName(s.name, variables), variables: environmentVariables(s.environment) }));
  // v4 sends services as objects (alias, command, entrypoint, pull_policy, variables); v1 by name.
  const specs: ServiceOptions[] = build.options.serviceSpecs ?? (build.options.services ?? []).map((name) => ({ name }));
  const jobs = specs.map((s): AnyService => ({ ...s, name: expandName(s.name, variables) }));
  for (const s of [...own, ...jobs]) checkImageName(s.name, 'service');
  for (const s of jobs) verifyAllowedImage({ image: s.name, list: 'services', allowed: o.allowed_services, internal: own.map((r) => r.name), log });
  const all = [...own, ...jobs];
  if (o.services_limit >= 0 && all.length > o.services_limit) {
    throw new ExecutorSetupError('TOO_MANY_SERVICES', `too many services requested: ${all.length}, only ${o.services_limit} allowed`);
  }
  const policiesOf = (name: string, job: PullPolicy[] | undefined): PullPolicy[] => effectivePullPolicies({ image: name, job, runner: o.pull_policy, allowed: o.allowed_pull_policies });
  const servicesPrivileged = o.services_privileged ?? o.privileged;
  const services = all.map(({ pull_policy, variables: ownVariables, executor_opts, environment: _, ...spec }): PlannedService => ({
    ...spec,
    policies: policiesOf(spec.name, pull_policy),
    privileged: servicesPrivileged && privilegedAllowed(spec.name, o.allowed_privileged_services),
    devices: Object.entries(o.services_devices).flatMap(([glob, devices]) => (picomatch.isMatch(spec.name, glob, { dot: true }) ? devices : [])),
    variables: serviceOwnVariables(ownVariables, variables),
    ...dockerOpts(executor_opts, variables, `service ${spec.name}`),
  }));
  return {
    image,
    imagePolicies: policiesOf(image, build.options.imagePullPolicy),
    privileged: o.privileged && privilegedAllowed(image, o.allowed_privileged_images),
    ...(user ? { user } : {}),
    ...(imageOpts.platform ? { platform: imageOpts.platform } : {}),
    services,
  };
}
