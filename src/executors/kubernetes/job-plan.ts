/**
 * Everything the job decides about its pod before any API call (pure but for the job log): the job's
 * overwrites of `[runners.kubernetes]` (overwrites.ts), the namespace, the image and the services the
 * runner allows, each container's pull policies, security context and resources, the labels and
 * annotations, and whether the `pod_spec` patches apply (FF_USE_ADVANCED_POD_SPEC_CONFIGURATION, off by
 * default as in GitLab Runner 19). Any refusal fails the job with its reason before a pod exists.
 */
import type { ServiceOptions } from '../../protocol/types.js';
import { expandString } from '../../util/expand.js';
import { parseGoBool } from '../../util/go-bool.js';
import { verifyAllowedImage } from '../common/image-policy.js';
import { expandName } from '../common/image-name.js';
import { serviceAliases } from '../common/service-aliases.js';
import { kubernetesUser } from '../common/executor-opts.js';
import { serviceOwnVariables } from '../common/service-variables.js';
import { ExecutorSetupError, type ExportedVariable, type PrepareRequest } from '../types.js';
import { jobLabels, LABEL_PREFIX, labelValue, OWNER_POD_ANNOTATION, type Owner } from './labels.js';
import type { KubernetesOptions, KubernetesPullPolicy, KubernetesService } from './options.js';
import { createOverwrites, serviceResources } from './overwrites.js';
import { goDuration, podMetadata, podName, projectUniqueName } from './pod-metadata.js';
import { BUILD_CONTAINER, serviceContainerNames, serviceHostnames, type PlannedService, type PodPlan } from './pod-spec.js';
import { effectivePullPolicies, policyList } from './pull-policy.js';
import { containerSecurityContext, type JobRunAs } from './security.js';

export interface JobPlanInput {
  o: KubernetesOptions;
  request: PrepareRequest;
  owner: Owner;
  runnerToken: string;
  runnerName: string;
  terminationGraceSeconds: number;
}

export interface JobPlan {
  pod: PodPlan;
  /** ci-runner's labels, for the pod's secrets and other objects. */
  ownLabels: Record<string, string>;
  /** The `pod_spec` patches apply to this job. */
  patchPodSpec: boolean;
  /** Each service's own variables (none for the runner's), expanded: they go into the services' Secret. */
  serviceOwn: ExportedVariable[][];
}

const ADVANCED_POD_SPEC = 'FF_USE_ADVANCED_POD_SPEC_CONFIGURATION';
const ACTIVE_DEADLINE = 'FF_USE_POD_ACTIVE_DEADLINE_SECONDS';
const PRINT_POD_EVENTS = 'FF_PRINT_POD_EVENTS';

export function planJob(input: JobPlanInput): JobPlan {
  const { o, request } = input;
  const { build, variables, log, warn } = request;
  const lookup = (name: string): string => variables.findLast((v) => v.key === name)?.value ?? '';
  const expand = (text: string): string => expandString(text, lookup);
  const overwrites = createOverwrites(o, variables, log);
  const namespace = o.namespace_per_job ? `ci-job-${build.id}` : overwrites.namespace;

  const image = expandName(build.options.image ?? '', variables) || (o.image ? expand(o.image) : '');
  if (!image) throw new ExecutorSetupError('NO_IMAGE', 'no image: the job names none and [runners.kubernetes] image is not set');
  // The runner's own image and services are always allowed (GitLab Runner's internal images).
  const internal = o.image ? [expand(o.image)] : [];
  verifyAllowedImage({ image, list: 'images', allowed: o.allowed_images, internal, log });

  // v4 sends the job's services as objects (alias, entrypoint, command, pull_policy); v1 by name.
  const specs: ServiceOptions[] = build.options.serviceSpecs ?? (build.options.services ?? []).map((name) => ({ name }));
  const runnerServices = o.services.map((s) => ({ ...s, name: expandName(s.name, variables) }));
  const jobServices = specs.map(({ name, alias, entrypoint, command, pull_policy, executor_opts: opts, variables: own }) => ({
    service: { name: expandName(name, variables), ...(alias ? { alias } : {}), ...(entrypoint ? { entrypoint } : {}), ...(command ? { command } : {}) } as KubernetesService,
    pullPolicy: pull_policy,
    runAs: kubernetesUser(opts, variables, `service ${name}`),
    ownVariables: (own ?? []).map((v) => v.key).filter((key) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(key)),
  }));
  const internalServices = [...internal, ...runnerServices.map((s) => s.name)];
  for (const { service } of jobServices) verifyAllowedImage({ image: service.name, list: 'services', allowed: o.allowed_services, internal: internalServices, log });
  const all: Array<{ service: KubernetesService; pullPolicy?: KubernetesPullPolicy[]; runAs?: JobRunAs; ownVariables?: string[] }> = [...runnerServices.map((service) => ({ service })), ...jobServices];
  const containers = serviceContainerNames(all.map((s) => s.service));

  // A job service's own `variables:`, expanded (a runner service's `environment` is its container's env as it is).
  const serviceOwn: ExportedVariable[][] = [...runnerServices.map(() => []), ...specs.map((spec) => serviceOwnVariables(spec.variables, variables))];
  const buildPolicies = effectivePullPolicies(BUILD_CONTAINER, build.options.imagePullPolicy, o);
  log(`Using effective pull policy of ${policyList(buildPolicies)} for container ${BUILD_CONTAINER}`);
  const services: PlannedService[] = all.map(({ service, pullPolicy, runAs, ownVariables }, i) => {
    const container = containers[i] ?? `svc-${i}`;
    const pullPolicies = effectivePullPolicies(container, pullPolicy, o);
    log(`Using effective pull policy of ${policyList(pullPolicies)} for container ${container}`);
    return {
      ...service,
      container,
      hostnames: hostnamesOf(service, warn),
      pullPolicies,
      resources: serviceResources(o, overwrites.service, [...serviceVariables(service), ...(serviceOwn[i] ?? [])], log),
      securityContext: containerSecurityContext(o, o.service_container_security_context, container, runAs, warn),
      ...(ownVariables && ownVariables.length > 0 ? { ownVariables } : {}),
    };
  });

  const ownLabels = jobLabels(input.runnerToken, build.id, request.slot, input.owner);
  // The slot is the job's among its project's (CI_CONCURRENT_PROJECT_ID).
  const uniqueName = projectUniqueName(input.runnerToken, build.project_id, String(request.slot));
  const metadata = podMetadata({
    build,
    variables,
    runnerName: input.runnerName,
    uniqueName,
    runnerToken: input.runnerToken,
    expand,
    podLabels: overwrites.podLabels,
    podAnnotations: overwrites.podAnnotations,
    ours: {
      labels: ownLabels,
      annotations: {
        [`${LABEL_PREFIX}/job-name`]: build.name,
        [`${LABEL_PREFIX}/project`]: labelValue(build.project_name || String(build.project_id)),
        ...(input.owner.pod ? { [OWNER_POD_ANNOTATION]: `${input.owner.pod.namespace}/${input.owner.pod.name}` } : {}),
      },
    },
    log,
  });

  return {
    pod: {
      name: podName(uniqueName),
      namespace,
      labels: metadata.labels,
      annotations: metadata.annotations,
      image,
      ...(build.options.imageEntrypoint ? { entrypoint: build.options.imageEntrypoint } : {}),
      pullPolicies: buildPolicies,
      buildSecurityContext: containerSecurityContext(o, o.build_container_security_context, BUILD_CONTAINER, kubernetesUser(build.options.imageExecutorOpts, variables, 'image'), warn),
      services,
      overwrites,
      expand,
      terminationGraceSeconds: input.terminationGraceSeconds,
      ...activeDeadline(build.timeout, lookup(ACTIVE_DEADLINE), log),
      ...(parseGoBool(lookup(PRINT_POD_EVENTS)) === true ? { printEvents: true } : {}),
    },
    ownLabels,
    patchPodSpec: podSpecPatches(o, lookup(ADVANCED_POD_SPEC), warn),
    serviceOwn,
  };
}

/** Whether the `pod_spec` patches apply: only with the feature flag on, as in GitLab Runner; said either way. */
function podSpecPatches(o: KubernetesOptions, flag: string, warn: (line: string) => void): boolean {
  if (o.pod_spec.length === 0) return false;
  if (parseGoBool(flag) !== true) {
    warn(`WARNING: [runners.kubernetes] pod_spec is not applied: ${ADVANCED_POD_SPEC} is off (set it in [runners.feature_flags] or as a variable to apply it)`);
    return false;
  }
  warn(
    'WARNING: Advanced Pod Spec configuration enabled, merging the provided PodSpec to the generated one. This is a beta feature and is subject to change. Feedback is collected in this issue: https://gitlab.com/gitlab-org/gitlab-runner/-/issues/29659 ...',
  );
  return true;
}

/**
 * FF_USE_POD_ACTIVE_DEADLINE_SECONDS (on by default): the pod's activeDeadlineSeconds is the job's
 * timeout + 1 s, so the job times out on GitLab's side before Kubernetes kills the pod, as GitLab
 * Runner 19 sets it. A payload without a timeout (never from GitLab) gives the pod none.
 */
function activeDeadline(timeoutS: number, flag: string, log: (line: string) => void): { activeDeadlineSeconds?: number } {
  if (parseGoBool(flag) === false || !(timeoutS > 0)) return {};
  log(`Using ${ACTIVE_DEADLINE}, the Pod activeDeadlineSeconds will be set to the job timeout: ${goDuration(timeoutS)}...`);
  return { activeDeadlineSeconds: Math.floor(timeoutS) + 1 };
}

/** A runner service's `environment` (`NAME=value`) as variables, for its resource overwrites. */
function serviceVariables(service: KubernetesService): Array<{ key: string; value: string }> {
  return (service.environment ?? []).map((item) => {
    const eq = item.indexOf('=');
    return { key: item.slice(0, eq), value: item.slice(eq + 1) };
  });
}

/**
 * The names a service answers to: GitLab Runner's aliases where Kubernetes takes them as host names.
 * The names made from the image often are not (`group__image`); an alias the user gave that is not
 * gets a warning.
 */
function hostnamesOf(service: KubernetesService, warn: (line: string) => void): string[] {
  const all = serviceAliases(service);
  const derived = serviceAliases({ name: service.name });
  const refused = serviceHostnames(all.filter((alias) => !derived.includes(alias))).refused;
  if (refused.length > 0) warn(`WARNING: service ${service.name}: the alias ${refused.map((a) => `"${a}"`).join(', ')} cannot be a host name in Kubernetes; reach the service by another alias or at localhost`);
  return serviceHostnames(all).valid;
}
