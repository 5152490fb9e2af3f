/**
 * The job's pod, from `[runners.kubernetes]` and the job (pure: no I/O). One `build` container of the
 * job's image whose first process only waits (the stages arrive through exec, stage.ts), one `svc-N`
 * container per service, reachable from the build at `localhost` and by its aliases (hostAliases),
 * and the builds dir as an emptyDir at /builds. The image's ENTRYPOINT is kept and given the waiting
 * shell as its command, as docker does (`image: { entrypoint }` replaces it, `[""]` removes it).
 */
import type { V1Container, V1Pod, V1ResourceRequirements, V1Toleration, V1Volume, V1VolumeMount } from '@kubernetes/client-node';
import type { KubernetesOptions, KubernetesPullPolicy, KubernetesService } from './options.js';

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

export interface PodPlan {
  name: string;
  namespace: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  image: string;
  /** The job's `image: { entrypoint }`, when it gave one. */
  entrypoint?: string[];
  /** The job's image `kubernetes: user`, as runAsUser/runAsGroup of the build container. */
  runAs?: { runAsUser?: number; runAsGroup?: number };
  /** With their final names (variables expanded) and aliases (`serviceHostnames`). */
  services: Array<KubernetesService & { hostnames: string[] }>;
  pullPolicy?: KubernetesPullPolicy;
  /** The job's own `pull_policy` list, tried in order instead of `[runners.kubernetes] pull_policy`. */
  pullPolicies?: KubernetesPullPolicy[];
  /** Secret holding the services' environment (envFrom). */
  serviceEnvSecret?: string;
  /** Secret with the job's registry credentials (an image pull secret). */
  registrySecret?: string;
  terminationGraceSeconds: number;
}

/** Where service `i`'s own variable `name` is in the services' Secret (a Secret key allows `-._a-zA-Z0-9`). */
export const serviceSecretKey = (i: number, name: string): string => `svc-${i}.${name}`;

const PULL_POLICY: Record<KubernetesPullPolicy, string> = { always: 'Always', 'if-not-present': 'IfNotPresent', never: 'Never' };

export function podSpec(plan: PodPlan, o: KubernetesOptions): V1Pod {
  const volumes = userVolumes(o);
  const mounts = userMounts(o);
  const security = (runAs: PodPlan['runAs']) => (o.privileged || (runAs && Object.keys(runAs).length > 0) ? { securityContext: { ...(o.privileged ? { privileged: true } : {}), ...runAs } } : {});
  const pullPolicy = plan.pullPolicy ? { imagePullPolicy: PULL_POLICY[plan.pullPolicy] } : {};
  const build: V1Container = {
    name: BUILD_CONTAINER,
    image: plan.image,
    ...pullPolicy,
    ...buildCommand(plan.entrypoint),
    volumeMounts: [{ name: BUILDS_VOLUME, mountPath: POD_BUILDS_DIR }, ...mounts],
    ...resources(o.cpu_limit, o.memory_limit, o.cpu_request, o.memory_request),
    ...security(plan.runAs),
  };
  const services: V1Container[] = plan.services.map((service, i) => {
    const [first, ...rest] = service.entrypoint ?? [];
    return {
      name: `svc-${i}`,
      image: service.name,
      ...pullPolicy,
      ...(first !== undefined ? { command: [first, ...rest] } : {}),
      ...(service.command ? { args: service.command } : {}),
      ...(plan.serviceEnvSecret ? { envFrom: [{ secretRef: { name: plan.serviceEnvSecret } }] } : {}),
      // The service's own variables beat the job's of the same name (env wins over envFrom).
      ...(plan.serviceEnvSecret && service.ownVariables?.length ? { env: service.ownVariables.map((name) => ({ name, valueFrom: { secretKeyRef: { name: plan.serviceEnvSecret!, key: serviceSecretKey(i, name) } } })) } : {}),
      ...(mounts.length > 0 ? { volumeMounts: mounts } : {}),
      ...resources(o.service_cpu_limit, o.service_memory_limit, o.service_cpu_request, o.service_memory_request),
      ...security(service.runAs),
    };
  });
  const hostnames = [...new Set(plan.services.flatMap((s) => s.hostnames))];
  const hostAliases = [...(hostnames.length > 0 ? [{ ip: '127.0.0.1', hostnames }] : []), ...o.host_aliases.map((a) => ({ ip: a.ip, hostnames: [...a.hostnames] }))];
  const pullSecrets = [...o.image_pull_secrets, ...(plan.registrySecret ? [plan.registrySecret] : [])];
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: plan.name,
      namespace: plan.namespace,
      // Ours last: a pod_labels entry cannot hide a pod from its runner.
      labels: { ...o.pod_labels, ...plan.labels },
      annotations: { ...o.pod_annotations, ...plan.annotations },
    },
    spec: {
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: plan.terminationGraceSeconds,
      // The namespace's services as environment variables would only add noise to every job.
      enableServiceLinks: false,
      ...(o.service_account ? { serviceAccountName: o.service_account } : {}),
      ...(Object.keys(o.node_selector).length > 0 ? { nodeSelector: { ...o.node_selector } } : {}),
      ...(Object.keys(o.node_tolerations).length > 0 ? { tolerations: tolerations(o.node_tolerations) } : {}),
      ...(pullSecrets.length > 0 ? { imagePullSecrets: pullSecrets.map((name) => ({ name })) } : {}),
      ...(hostAliases.length > 0 ? { hostAliases } : {}),
      volumes: [{ name: BUILDS_VOLUME, emptyDir: {} }, ...volumes],
      containers: [build, ...services],
    },
  };
}

/** `command`/`args` of the build container (see the module comment). */
function buildCommand(entrypoint: string[] | undefined): Pick<V1Container, 'command' | 'args'> {
  if (entrypoint === undefined || entrypoint.length === 0) return { args: WAITING_SHELL };
  if (entrypoint.length === 1 && entrypoint[0] === '') return { command: WAITING_SHELL };
  return { command: entrypoint, args: WAITING_SHELL };
}

function resources(cpuLimit?: string, memoryLimit?: string, cpuRequest?: string, memoryRequest?: string): { resources?: V1ResourceRequirements } {
  const pick = (cpu?: string, memory?: string): Record<string, string> | undefined => {
    const out: Record<string, string> = {};
    if (cpu) out.cpu = cpu;
    if (memory) out.memory = memory;
    return Object.keys(out).length > 0 ? out : undefined;
  };
  const limits = pick(cpuLimit, memoryLimit);
  const requests = pick(cpuRequest, memoryRequest);
  if (!limits && !requests) return {};
  return { resources: { ...(limits ? { limits } : {}), ...(requests ? { requests } : {}) } };
}

/** GitLab Runner's form: `"key=value" = "Effect"`, `"key" = "Effect"` (any value), effect `""` = any. */
export function tolerations(table: Record<string, string>): V1Toleration[] {
  return Object.entries(table).map(([spec, effect]) => {
    const eq = spec.indexOf('=');
    const base: V1Toleration = eq < 0 ? { key: spec, operator: 'Exists' } : { key: spec.slice(0, eq), operator: 'Equal', value: spec.slice(eq + 1) };
    return effect ? { ...base, effect } : base;
  });
}

function userVolumes(o: KubernetesOptions): V1Volume[] {
  const items = (map: Record<string, string>) => (Object.keys(map).length > 0 ? { items: Object.entries(map).map(([key, path]) => ({ key, path })) } : {});
  return [
    ...o.volumes.host_path.map((v) => ({ name: v.name, hostPath: { path: v.host_path ?? v.mount_path } })),
    ...o.volumes.pvc.map((v) => ({ name: v.name, persistentVolumeClaim: { claimName: v.name, readOnly: v.read_only } })),
    ...o.volumes.config_map.map((v) => ({ name: v.name, configMap: { name: v.name, ...items(v.items) } })),
    ...o.volumes.secret.map((v) => ({ name: v.name, secret: { secretName: v.name, ...items(v.items) } })),
    ...o.volumes.empty_dir.map((v) => ({ name: v.name, emptyDir: { ...(v.medium ? { medium: v.medium } : {}), ...(v.size_limit ? { sizeLimit: v.size_limit } : {}) } })),
  ];
}

function userMounts(o: KubernetesOptions): V1VolumeMount[] {
  const { host_path, pvc, config_map, secret, empty_dir } = o.volumes;
  return [...host_path, ...pvc, ...config_map, ...secret, ...empty_dir].map((v) => ({
    name: v.name,
    mountPath: v.mount_path,
    ...('read_only' in v && v.read_only ? { readOnly: true } : {}),
    ...(v.sub_path ? { subPath: v.sub_path } : {}),
  }));
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
