/**
 * Starts a job's services (job-plan.ts decided which, with what pull policies and privileges) on a
 * network made for the job: each container gets the job's public variables (service-variables.ts) and its own
 * through an env file removed once it runs, the `[runners.docker]` keys of a service (create-args.ts),
 * and is waited for up to `wait_for_services_timeout` (its HEALTHCHECK_TCP_PORT alone, when it has one).
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { writeNewFile } from '../../util/new-file.js';
import type { PrepareRequest } from '../types.js';
import type { DockerCli } from './cli.js';
import { networkFlags, serviceFlags } from './create-args.js';
import { ensureImage, type EnsureOptions } from './image.js';
import type { PlannedService } from './job-plan.js';
import { containerLabelArgs } from './labels.js';
import type { DockerOptions } from './options.js';
import { splitServiceEnv } from './service-env.js';
import { serviceEnvironment } from '../common/service-variables.js';
import { healthcheckPort, serviceRunArgs, waitForServices, type StartedService } from './services.js';

export interface ServicesStart {
  docker: DockerCli;
  options: DockerOptions;
  services: readonly PlannedService[];
  /** The job's container name prefix, labels and volume binds. */
  prefix: string;
  labels: string[];
  binds: readonly string[];
  /** Secrets no service may see (the job's and the runner's tokens). */
  secrets: readonly string[];
  /** How images are got (the job's registry logins, the image cache). */
  ensure: Omit<EnsureOptions, 'log' | 'signal'>;
  /** Told the network once made, and each container as soon as it may exist, so cleanup removes them whatever happens. */
  track(kind: 'network' | 'container', name: string): void;
}

/** Makes the job's network, starts its services and waits for them. */
export async function startServices(start: ServicesStart, request: PrepareRequest): Promise<void> {
  const o = start.options;
  const { signal } = request;
  if (o.network_mode) request.warn(`WARNING: network_mode = "${o.network_mode}": services run on the job's own network and may not be reachable from the build`);
  const network = `${start.prefix}-network`;
  await start.docker.run(['network', 'create', ...start.labels, ...networkFlags(o), network], { signal });
  start.track('network', network);
  const started: StartedService[] = [];
  for (const [i, spec] of start.services.entries()) {
    // The job's public variables and the service's own (GitLab Runner's GetServiceVariables), in a file.
    const serviceEnv = splitServiceEnv(serviceEnvironment([...request.variables, ...spec.variables], start.secrets));
    if (serviceEnv.skipped.length > 0) request.warn(`WARNING: not given to service ${spec.name} (multi-line values under names the docker CLI on this machine would read itself): ${serviceEnv.skipped.join(', ')}`);
    const envFile = join(request.stateDir, `service-${i}.env`);
    if (serviceEnv.file) await writeNewFile(envFile, serviceEnv.file, 0o600);
    try {
      request.log(`Starting service ${spec.name} ...`);
      request.log(`Using effective pull policy of [${spec.policies.join(' ')}] for container ${spec.name}`);
      await ensureImage(start.docker, spec.name, spec.policies, { ...start.ensure, log: request.log, signal, ...(spec.platform ? { platform: spec.platform } : {}) });
      const container = `${start.prefix}-service-${i}`;
      start.track('container', container);
      const flags = [...containerLabelArgs(o.container_labels, request.variables, true), ...serviceFlags(o, { privileged: spec.privileged, devices: spec.devices, volumes: start.binds })];
      const args = serviceRunArgs(spec, {
        container, network, labels: start.labels, ...(serviceEnv.file ? { envFile } : {}), byName: Object.keys(serviceEnv.byName), flags,
        ...(spec.user ? { user: spec.user } : {}), ...(spec.platform ? { platform: spec.platform } : {}),
      });
      await start.docker.run(args, { env: serviceEnv.byName, signal });
      started.push({ container, image: spec.name, ...healthcheckPort([...request.variables, ...spec.variables]) });
    } finally {
      await rm(envFile, { force: true });
    }
  }
  await waitForServices(start.docker, started, { timeoutS: o.wait_for_services_timeout, log: request.log, warn: request.warn, signal });
}
