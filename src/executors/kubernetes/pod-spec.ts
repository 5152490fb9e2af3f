/**
 * The job's pod, from `[runners.kubernetes]`, the job's overwrites and the job (pure: no I/O). One
 * `build` container of the job's image whose first process only waits (the stages arrive through exec,
 * stage.ts), one container per service (named by its first alias that is a DNS label, else `svc-N`,
 * as GitLab Runner names them), reachable from the build at `localhost` and by its aliases
 * (hostAliases), and the builds dir as an emptyDir at /builds unless a configured volume is mounted
 * there. The image's ENTRYPOINT is kept and given the waiting shell as its command, as docker does
 * (`image: { entrypoint }` replaces it, `[""]` removes it). The other fields are GitLab Runner 19's:
 * pod-fields.ts, security.ts, volumes.ts; `[[runners.kubernetes.pod_spec]]` patches come after
 * (pod-patch.ts).
 */
import type { V1Container, V1Pod, V1ResourceRequirements, V1SecurityContext } from '@kubernetes/client-node';
import type { KubernetesOptions, KubernetesPullPolicy, KubernetesService } from './options.js';
import type { Overwrites, ResourceLists } from './overwrites.js';
import { affinity, dnsConfig, dnsPolicy, lifecycle, tolerations } from './pod-fields.js';
import { podSecurityContext } from './security.js';
import { userMounts, userVolumes, type Expand } from './volumes.js';

/** Where the slot dir is in the build container (GitLab Runner's path, as in the docker executor). */
export const POD_BUILDS_DIR = '/builds';
export const BUILD_CONTAINER = 'build';
const BUILDS_VOLUME = 'ci-runner-builds';

/** Made by the waiting shell when it starts: the image's ENTRYPOINT, if any, did run its command. */
export const WAITING_MARKER = `${POD_BUILDS_DIR}/.ci-runner-waiting`;

/**
 * The build container's first process: marks that it started, then waits until the pod is deleted,
 * and exits at once on SIGTERM (a PID 1 without a handler would ignore it and hold the deletion for
 * the whole grace period).
 */
export const WAITING_SHELL = ['sh', '-c', `: > ${WAITING_MARKER}; trap "exit 0" TERM INT; while :; do sleep 3600 & wait $!; done`];

/** `undefined`: the cluster's default pull policy. */
export type PullChoice = KubernetesPullPolicy | undefined;

/** A service of the pod, with all the job has decided about it. */
export interface PlannedService extends KubernetesService {
  /** Its container's name. */
  container: string;
  /** The names it answers to from the build container (`serviceHostnames`). */
  hostnames: string[];
  /** Pull policies to try in order. */
  pullPolicies: PullChoice[];
  resources: ResourceLists;
  securityContext: V1SecurityContext;
  /** Names of the job's own variables for this service (`services: [{ variables }]`), in the services' Secret under `serviceSecretKey`. */
  ownVariables?: string[];
}

/** Where service `i`'s own variable `name` is in the services' Secret (a Secret key allows `-._a-zA-Z0-9`). */
export const serviceSecretKey = (i: number, name: string): string => `svc-${i}.${name}`;

export interface PodPlan {
  name: string;
  namespace: string;
  /** The pod's final labels and annotations. */
  labels: Record<string, string>;
  annotations: Record<string, string>;
  image: string;
  /** The job's `image: { entrypoint }`, when it gave one. */
  entrypoint?: string[];
  /** The build container's pull policies to try in order. */
  pullPolicies: PullChoice[];
  buildSecurityContext: V1SecurityContext;
  services: PlannedService[];
  overwrites: Overwrites;
  /** `$VAR` expansion against the job's variables (volume paths). */
  expand: Expand;
  /** Secret holding the services' environment (envFrom). */
  serviceEnvSecret?: string;
  /** Secret with the job's registry credentials (an image pull secret). */
  registrySecret?: string;
  terminationGraceSeconds: number;
  /** The job's timeout + 1 s (FF_USE_POD_ACTIVE_DEADLINE_SECONDS). */
  activeDeadlineSeconds?: number;
  /** FF_PRINT_POD_EVENTS: the pod's events go to the job log while it starts (job-pod.ts). */
  printEvents?: boolean;
}

/** Which of each container's pull policies this attempt uses: container name → index (default 0). */
export type PullAttempt = Readonly<Record<string, number>>;

const PULL_POLICY: Record<KubernetesPullPolicy, string> = { always: 'Always', 'if-not-present': 'IfNotPresent', never: 'Never' };

/** A container's pull policy at `attempt` (its last one once the attempts run past its list). */
export function pullPolicyAt(policies: readonly PullChoice[], index: number | undefined): PullChoice {
  return policies[Math.min(index ?? 0, policies.length - 1)];
}

export function podSpec(plan: PodPlan, o: KubernetesOptions, attempt: PullAttempt = {}): V1Pod {
  const ow = plan.overwrites;
  const mounts = userMounts(o.volumes, plan.expand);
  const ownBuildsDir = !mounts.some((m) => m.mountPath === POD_BUILDS_DIR);
  const hooks = lifecycle(o);
  const pull = (container: string, policies: readonly PullChoice[]) => {
    const policy = pullPolicyAt(policies, attempt[container]);
    return policy ? { imagePullPolicy: PULL_POLICY[policy] } : {};
  };
  const build: V1Container = {
    name: BUILD_CONTAINER,
    image: plan.image,
    ...pull(BUILD_CONTAINER, plan.pullPolicies),
    ...buildCommand(plan.entrypoint),
    volumeMounts: [...(ownBuildsDir ? [{ name: BUILDS_VOLUME, mountPath: POD_BUILDS_DIR }] : []), ...mounts],
    ...resources(ow.build),
    securityContext: plan.buildSecurityContext,
    ...(hooks ? { lifecycle: hooks } : {}),
  };
  const services: V1Container[] = plan.services.map((service, i) => {
    const [first, ...rest] = service.entrypoint ?? [];
    // The service's own variables beat the job's of the same name (env wins over envFrom).
    const secret = plan.serviceEnvSecret;
    const env = [
      ...(service.environment ?? []).map(environmentVariable),
      ...(secret ? (service.ownVariables ?? []).map((name) => ({ name, valueFrom: { secretKeyRef: { name: secret, key: serviceSecretKey(i, name) } } })) : []),
    ];
    return {
      name: service.container,
      image: service.name,
      ...pull(service.container, service.pullPolicies),
      ...(first !== undefined ? { command: [first, ...rest] } : {}),
      ...(service.command ? { args: service.command } : {}),
      ...(plan.serviceEnvSecret ? { envFrom: [{ secretRef: { name: plan.serviceEnvSecret } }] } : {}),
      ...(env.length > 0 ? { env } : {}),
      ...(mounts.length > 0 ? { volumeMounts: mounts } : {}),
      ...resources(service.resources),
      securityContext: service.securityContext,
      ...(hooks ? { lifecycle: hooks } : {}),
    };
  });
  const hostnames = [...new Set(plan.services.flatMap((s) => s.hostnames))];
  const hostAliases = [...(hostnames.length > 0 ? [{ ip: '127.0.0.1', hostnames }] : []), ...o.host_aliases.map((a) => ({ ip: a.ip, hostnames: [...a.hostnames] }))];
  const pullSecrets = o.use_service_account_image_pull_secrets ? [] : [...o.image_pull_secrets, ...(plan.registrySecret ? [plan.registrySecret] : [])];
  const podResources = resources(ow.pod).resources;
  const security = podSecurityContext(o);
  const podAffinity = affinity(o);
  const dns = dnsConfig(o);
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: plan.name, namespace: plan.namespace, labels: plan.labels, annotations: plan.annotations },
    spec: {
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: plan.terminationGraceSeconds,
      ...(plan.activeDeadlineSeconds !== undefined ? { activeDeadlineSeconds: plan.activeDeadlineSeconds } : {}),
      // The namespace's services as environment variables would only add noise to every job.
      enableServiceLinks: false,
      ...(ow.serviceAccount ? { serviceAccountName: ow.serviceAccount } : {}),
      ...(o.automount_service_account_token !== undefined ? { automountServiceAccountToken: o.automount_service_account_token } : {}),
      ...(Object.keys(ow.nodeSelector).length > 0 ? { nodeSelector: { ...ow.nodeSelector } } : {}),
      ...(Object.keys(ow.nodeTolerations).length > 0 ? { tolerations: tolerations(ow.nodeTolerations) } : {}),
      ...(podAffinity ? { affinity: podAffinity } : {}),
      ...(o.scheduler_name ? { schedulerName: o.scheduler_name } : {}),
      ...(o.priority_class_name ? { priorityClassName: o.priority_class_name } : {}),
      ...(o.runtime_class_name ? { runtimeClassName: o.runtime_class_name } : {}),
      dnsPolicy: dnsPolicy(o),
      ...(dns ? { dnsConfig: dns } : {}),
      ...(security ? { securityContext: security } : {}),
      ...(podResources ? { resources: podResources } : {}),
      ...(pullSecrets.length > 0 ? { imagePullSecrets: pullSecrets.map((name) => ({ name })) } : {}),
      ...(hostAliases.length > 0 ? { hostAliases } : {}),
      volumes: [...(ownBuildsDir ? [{ name: BUILDS_VOLUME, emptyDir: {} }] : []), ...userVolumes(o.volumes, plan.expand)],
      containers: [build, ...services],
    },
  };
}

/** A runner service's `NAME=value`; `$` doubled so Kubernetes does not expand `$(NAME)` in it. */
function environmentVariable(item: string): { name: string; value: string } {
  const eq = item.indexOf('=');
  return { name: item.slice(0, eq), value: item.slice(eq + 1).replace(/\$/g, '$$$$') };
}

/** `command`/`args` of the build container (see the module comment). */
function buildCommand(entrypoint: string[] | undefined): Pick<V1Container, 'command' | 'args'> {
  if (entrypoint === undefined || entrypoint.length === 0) return { args: WAITING_SHELL };
  if (entrypoint.length === 1 && entrypoint[0] === '') return { command: WAITING_SHELL };
  return { command: entrypoint, args: WAITING_SHELL };
}

function resources(lists: ResourceLists): { resources?: V1ResourceRequirements } {
  const { limits, requests } = lists;
  const has = (map: Record<string, string>) => Object.keys(map).length > 0;
  if (!has(limits) && !has(requests)) return {};
  return { resources: { ...(has(limits) ? { limits: { ...limits } } : {}), ...(has(requests) ? { requests: { ...requests } } : {}) } };
}

/**
 * The names a service answers to from the build container: its image name and GitLab's aliases, kept
 * only where Kubernetes accepts them as host names (`a__b` is none).
 */
export function serviceHostnames(aliases: readonly string[]): { valid: string[]; refused: string[] } {
  const valid: string[] = [];
  const refused: string[] = [];
  for (const alias of aliases) (/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(alias) && alias.length <= 253 ? valid : refused).push(alias);
  return { valid, refused };
}

/**
 * The services' container names, as GitLab Runner picks them: each one's first explicit alias that is a
 * DNS label and not taken yet, else `svc-<n>` counting the unnamed ones.
 */
export function serviceContainerNames(services: ReadonlyArray<Pick<KubernetesService, 'alias'>>): string[] {
  const used = new Set<string>([BUILD_CONTAINER]);
  let unnamed = 0;
  return services.map((service) => {
    const aliases = (service.alias ?? '').split(/[\s,]+/).filter(Boolean);
    let name: string | undefined;
    for (const alias of aliases) {
      if (used.has(alias)) continue;
      used.add(alias);
      if (/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(alias)) {
        name = alias;
        break;
      }
    }
    if (!name) {
      name = `svc-${unnamed}`;
      unnamed += 1;
    }
    used.add(name);
    return name;
  });
}
