/**
 * The security contexts of the job's pod as GitLab Runner 19 makes them: the pod's from
 * `pod_security_context`; each container's from its table (`build_container_security_context`,
 * `service_container_security_context`) over the runner-wide `privileged`, `allow_privilege_escalation`,
 * `cap_add` and `cap_drop`, NET_RAW dropped unless added; and the user a job asks for
 * (`image: { kubernetes: { user: "uid:gid" } }`) where neither table sets one and `allowed_users` /
 * `allowed_groups` allow it (root only when listed). Pure: no I/O.
 */
import type { V1Capabilities, V1PodSecurityContext, V1SecurityContext } from '@kubernetes/client-node';
import type { ContainerSecurityContextOptions, KubernetesOptions, ProfileOptions } from './options.js';

/** Dropped from every container unless `cap_add` names it (GitLab Runner's default). */
export const DEFAULT_CAP_DROP = ['NET_RAW'];

/** The user a job asks for a container: numbers, as runAsUser and runAsGroup take them. */
export interface JobRunAs {
  runAsUser?: number;
  runAsGroup?: number;
}

/** `pod_security_context`, or nothing when it sets nothing. */
export function podSecurityContext(o: KubernetesOptions): V1PodSecurityContext | undefined {
  const p = o.pod_security_context;
  const context: V1PodSecurityContext = {
    ...(p.fs_group !== undefined ? { fsGroup: p.fs_group } : {}),
    ...(p.run_as_group !== undefined ? { runAsGroup: p.run_as_group } : {}),
    ...(p.run_as_non_root !== undefined ? { runAsNonRoot: p.run_as_non_root } : {}),
    ...(p.run_as_user !== undefined ? { runAsUser: p.run_as_user } : {}),
    ...(p.supplemental_groups.length > 0 ? { supplementalGroups: [...p.supplemental_groups] } : {}),
    ...(p.selinux_type ? { seLinuxOptions: { type: p.selinux_type } } : {}),
    ...profiles(p),
  };
  return Object.keys(context).length > 0 ? context : undefined;
}

/**
 * A container's security context: its table over the runner-wide keys, and the job's user where the
 * tables leave it open. `warn` gets GitLab Runner's lines about a user it does not take.
 */
export function containerSecurityContext(
  o: KubernetesOptions,
  table: ContainerSecurityContextOptions,
  container: string,
  runAs: JobRunAs | undefined,
  warn: (line: string) => void,
): V1SecurityContext {
  const privileged = table.privileged ?? o.privileged;
  const escalation = table.allow_privilege_escalation ?? o.allow_privilege_escalation;
  const capabilities = mergeCapabilities(runnerCapabilities(o), table.capabilities);
  const runAsUser = pickId('user', container, table.run_as_user, o.pod_security_context.run_as_user, runAs?.runAsUser, o.allowed_users, warn);
  const runAsGroup = pickId('group', container, table.run_as_group, o.pod_security_context.run_as_group, runAs?.runAsGroup, o.allowed_groups, warn);
  return {
    ...(capabilities ? { capabilities } : {}),
    ...(privileged !== undefined ? { privileged } : {}),
    ...(escalation !== undefined ? { allowPrivilegeEscalation: escalation } : {}),
    ...(runAsGroup !== undefined ? { runAsGroup } : {}),
    ...(table.run_as_non_root !== undefined ? { runAsNonRoot: table.run_as_non_root } : {}),
    ...(runAsUser !== undefined ? { runAsUser } : {}),
    ...(table.read_only_root_filesystem !== undefined ? { readOnlyRootFilesystem: table.read_only_root_filesystem } : {}),
    ...(table.proc_mount ? { procMount: table.proc_mount } : {}),
    ...(table.selinux_type ? { seLinuxOptions: { type: table.selinux_type } } : {}),
    ...profiles(table),
  };
}

/** `cap_add` and `cap_drop` over the default drop: a capability both dropped and added is added. */
function runnerCapabilities(o: KubernetesOptions): V1Capabilities | undefined {
  const enabled = new Map<string, boolean>();
  for (const name of DEFAULT_CAP_DROP) enabled.set(name, false);
  for (const name of o.cap_add) enabled.set(name, true);
  for (const name of o.cap_drop) enabled.set(name, false);
  if (enabled.size === 0) return undefined;
  const add = [...enabled].filter(([, on]) => on).map(([name]) => name);
  const drop = [...enabled].filter(([, on]) => !on).map(([name]) => name);
  return { ...(add.length > 0 ? { add } : {}), ...(drop.length > 0 ? { drop } : {}) };
}

/** A container table's `capabilities.add` / `.drop`, where set, replace the runner-wide lists. */
function mergeCapabilities(runner: V1Capabilities | undefined, table: ContainerSecurityContextOptions['capabilities']): V1Capabilities | undefined {
  const add = table?.add ?? runner?.add;
  const drop = table?.drop ?? runner?.drop;
  if (add === undefined && drop === undefined) return undefined;
  return { ...(add && add.length > 0 ? { add: [...add] } : {}), ...(drop && drop.length > 0 ? { drop: [...drop] } : {}) };
}

function profiles(table: { seccomp_profile?: ProfileOptions; app_armor_profile?: ProfileOptions }): Pick<V1SecurityContext, 'seccompProfile' | 'appArmorProfile'> {
  const profile = (p: ProfileOptions) => ({ type: p.type, ...(p.type === 'Localhost' && p.localhost_profile ? { localhostProfile: p.localhost_profile } : {}) });
  return {
    ...(table.seccomp_profile ? { seccompProfile: profile(table.seccomp_profile) } : {}),
    ...(table.app_armor_profile ? { appArmorProfile: profile(table.app_armor_profile) } : {}),
  };
}

/**
 * The container's user (or group): its table's, else the pod's, else the job's when the allow-list
 * takes it. A job's value the tables override is said in the log, as GitLab Runner says it.
 */
function pickId(
  kind: 'user' | 'group',
  container: string,
  fromContainer: number | undefined,
  fromPod: number | undefined,
  fromJob: number | undefined,
  allowed: readonly string[],
  warn: (line: string) => void,
): number | undefined {
  const set = fromContainer ?? fromPod;
  if (set !== undefined) {
    if (fromJob !== undefined) {
      const source = fromContainer !== undefined ? 'container security context' : 'pod security context';
      warn(`Overriding ${kind} for container "${container}" to "${fromJob}" is not allowed: ${kind} is set to ${set} in ${source}`);
    }
    return set;
  }
  if (fromJob === undefined) return undefined;
  const refusal = idRefusal(kind, fromJob, allowed);
  if (!refusal) return fromJob;
  const id = kind === 'user' ? 'uid' : 'gid';
  warn(`Error parsing '${id}' from image options for container "${container}", using the configured security context: validating ${id.toUpperCase()}: ${refusal}`);
  return undefined;
}

/** Why `allowed` does not take `id`: root must be listed; any other is allowed by an empty list. */
function idRefusal(kind: 'user' | 'group', id: number, allowed: readonly string[]): string | undefined {
  const listed = allowed.some((entry) => /^\d+$/.test(entry.trim()) && Number(entry) === id);
  if (listed || (id !== 0 && allowed.length === 0)) return undefined;
  return `${kind} "${id}" is not in the allowed list: [${allowed.join(' ')}]`;
}
