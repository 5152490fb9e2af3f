/**
 * What a job may change of `[runners.kubernetes]` through its variables, where the runner allows it
 * (GitLab Runner's overwrites): the namespace, service account and bearer token; pod labels,
 * annotations, node selectors and tolerations (`KUBERNETES_POD_LABELS_*` = `key=value`, …), each
 * checked against the runner's `*_overwrite_allowed` regex; and the containers' and the pod's resources
 * (`KUBERNETES_CPU_LIMIT`, …), each at most the runner's `*_overwrite_max_allowed`. Above it, or not
 * matching, the job fails with GitLab Runner's message; what was changed is said in the job log as it
 * says it (`"CPULimit" overwritten with "2"`). Pure: no I/O.
 */
import { ExecutorSetupError, type ExportedVariable } from '../types.js';
import type { KubernetesOptions, KubernetesResourceKeys } from './options.js';
import { compareQuantities, parseQuantity } from './quantity.js';

/** `limits`/`requests` of a container or the pod: resource name → quantity. */
export interface ResourceLists {
  limits: Record<string, string>;
  requests: Record<string, string>;
}

export interface Overwrites {
  namespace: string;
  serviceAccount?: string;
  bearerToken?: string;
  podLabels: Record<string, string>;
  podAnnotations: Record<string, string>;
  nodeSelector: Record<string, string>;
  nodeTolerations: Record<string, string>;
  build: ResourceLists;
  service: ResourceLists;
  pod: ResourceLists;
}

/** The resource kinds a container's keys set, with GitLab Runner's field names in its messages. */
const KINDS = [
  { resource: 'cpu', key: 'cpu', field: 'CPU' },
  { resource: 'memory', key: 'memory', field: 'Memory' },
  { resource: 'ephemeral-storage', key: 'ephemeral_storage', field: 'EphemeralStorage' },
] as const;

type Scope = { prefix: '' | 'service_' | 'pod_'; field: '' | 'Service' | 'Pod'; variable: string; what: string };
const SCOPES = {
  build: { prefix: '', field: '', variable: 'KUBERNETES_', what: 'build' },
  service: { prefix: 'service_', field: 'Service', variable: 'KUBERNETES_SERVICE_', what: 'service' },
  pod: { prefix: 'pod_', field: 'Pod', variable: 'KUBERNETES_POD_', what: 'Pod' },
} as const satisfies Record<string, Scope>;

/** A job's variables, the last definition of a name winning. */
type Lookup = (name: string) => string | undefined;

/** Thrown for an overwrite the runner does not allow: the job fails with this message. */
export class OverwriteError extends ExecutorSetupError {
  constructor(message: string) {
    super('KUBERNETES_OVERWRITE', `couldn't prepare overwrites: ${message}`);
  }
}

/** The job's overwrites of `o`, checked; `log` gets GitLab Runner's lines about each one applied. */
export function createOverwrites(o: KubernetesOptions, variables: readonly ExportedVariable[], log: (line: string) => void): Overwrites {
  const last = new Map(variables.map((v) => [v.key, v.value]));
  const lookup: Lookup = (name) => last.get(name);
  const bearerToken = overwrite('BearerToken', o.bearer_token, o.bearer_token_overwrite_allowed ? '.+' : undefined, lookup('KUBERNETES_BEARER_TOKEN'), log);
  const serviceAccount = overwrite('ServiceAccount', o.service_account, o.service_account_overwrite_allowed, lookup('KUBERNETES_SERVICE_ACCOUNT_OVERWRITE'), log);
  return {
    namespace: overwrite('Namespace', o.namespace, o.namespace_overwrite_allowed, lookup('KUBERNETES_NAMESPACE_OVERWRITE'), log) ?? o.namespace,
    ...(serviceAccount ? { serviceAccount } : {}),
    ...(bearerToken ? { bearerToken } : {}),
    podLabels: mapOverwrite('PodLabels', o.pod_labels, o.pod_labels_overwrite_allowed, variables, 'KUBERNETES_POD_LABELS_', splitKeyValue, log),
    podAnnotations: mapOverwrite('PodAnnotations', o.pod_annotations, o.pod_annotations_overwrite_allowed, variables, 'KUBERNETES_POD_ANNOTATIONS_', splitKeyValue, log),
    nodeSelector: mapOverwrite('NodeSelector', o.node_selector, o.node_selector_overwrite_allowed, variables, 'KUBERNETES_NODE_SELECTOR_', splitKeyValue, log),
    nodeTolerations: mapOverwrite('NodeTolerations', o.node_tolerations, o.node_tolerations_overwrite_allowed, variables, 'KUBERNETES_NODE_TOLERATIONS_', splitToleration, log),
    build: resourceLists(o, SCOPES.build, lookup, log),
    service: resourceLists(o, SCOPES.service, lookup, log),
    pod: resourceLists(o, SCOPES.pod, lookup, log),
  };
}

/**
 * One service's resources, where its own variables (`services: [{ variables: { KUBERNETES_SERVICE_CPU_LIMIT } }]`)
 * ask for other ones than the job's: bounded by the same `service_*_overwrite_max_allowed`.
 */
export function serviceResources(o: KubernetesOptions, base: ResourceLists, variables: readonly ExportedVariable[], log: (line: string) => void): ResourceLists {
  const last = new Map(variables.map((v) => [v.key, v.value]));
  const asked = KINDS.some(({ key }) => ['LIMIT', 'REQUEST'].some((kind) => last.has(`KUBERNETES_SERVICE_${key.toUpperCase()}_${kind}`)));
  if (!asked) return base;
  const from = { ...o };
  for (const { resource, key } of KINDS) {
    from[`service_${key}_limit`] = base.limits[resource];
    from[`service_${key}_request`] = base.requests[resource];
  }
  return resourceLists(from, SCOPES.service, (name) => last.get(name), log);
}

function resourceLists(o: KubernetesResourceKeys, scope: Scope, lookup: Lookup, log: (line: string) => void): ResourceLists {
  const list = (kind: 'limit' | 'request'): Record<string, string> => {
    const out: Record<string, string> = {};
    for (const { resource, key, field } of KINDS) {
      // GitLab Runner has no pod-level ephemeral storage.
      if (scope.prefix === 'pod_' && key === 'ephemeral_storage') continue;
      const name = `${scope.prefix}${key}_${kind}` as keyof KubernetesResourceKeys;
      const value = resourceOverwrite(
        `${scope.field}${field}${kind === 'limit' ? 'Limit' : 'Request'}`,
        o[name],
        o[`${name}_overwrite_max_allowed` as keyof KubernetesResourceKeys],
        lookup(`${scope.variable}${key.toUpperCase()}_${kind.toUpperCase()}`),
        log,
        `${scope.what} ${kind === 'limit' ? 'limits' : 'requests'}`,
      );
      if (value) out[resource] = value;
    }
    return out;
  };
  return { requests: list('request'), limits: list('limit') };
}

/** A resource: the job's value when the runner has a bound and the value is within it. */
function resourceOverwrite(field: string, value: string | undefined, max: string | undefined, asked: string | undefined, log: (line: string) => void, what: string): string | undefined {
  if (!max || !asked) return value;
  const bound = parseQuantity(max);
  const wanted = parseQuantity(asked);
  if (!bound || !wanted) throw new OverwriteError(`invalid ${what} specified: parsing resource limit: "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'" (${JSON.stringify(asked)})`);
  if (compareQuantities(wanted, bound) > 0) {
    throw new OverwriteError(`invalid ${what} specified: the resource ${JSON.stringify(field)} requested ${JSON.stringify(asked)} is higher than limit allowed ${JSON.stringify(max)}`);
  }
  log(`${JSON.stringify(field)} overwritten with ${JSON.stringify(asked)}`);
  return asked;
}

/** A single value: the job's, when the runner's regex allows it. */
function overwrite(field: string, value: string | undefined, regex: string | undefined, asked: string | undefined, log: (line: string) => void): string | undefined {
  if (!regex || !asked) return value;
  check(regex, asked);
  log(`${JSON.stringify(field)} overwritten with ${JSON.stringify(field === 'BearerToken' ? 'XXXXXXXX...' : asked)}`);
  return asked;
}

/** A map: every variable named `prefix*` whose value the regex allows adds (or replaces) one entry. */
function mapOverwrite(
  field: string,
  values: Readonly<Record<string, string>>,
  regex: string | undefined,
  variables: readonly ExportedVariable[],
  prefix: string,
  split: (text: string) => [string, string],
  log: (line: string) => void,
): Record<string, string> {
  const out = { ...values };
  if (!regex) return out;
  for (const { key, value } of variables) {
    if (!key.startsWith(prefix)) continue;
    check(regex, value);
    const [name, item] = split(value);
    out[name] = item;
    log(`${JSON.stringify(field)} ${JSON.stringify(name)} overwritten with ${JSON.stringify(item)}`);
  }
  return out;
}

function splitKeyValue(text: string): [string, string] {
  const eq = text.indexOf('=');
  if (eq < 0) throw new OverwriteError(`provided value ${JSON.stringify(text)} does not match "k=v"`);
  return [text.slice(0, eq), text.slice(eq + 1)];
}

/** `key[=value]:effect`, the effect optional. */
function splitToleration(text: string): [string, string] {
  const colon = text.indexOf(':');
  return colon < 0 ? [text, ''] : [text.slice(0, colon), text.slice(colon + 1)];
}

function check(regex: string, value: string): void {
  if (!goRegExp(regex).test(value)) throw new OverwriteError(`provided value ${JSON.stringify(value)} does not match ${JSON.stringify(regex)}`);
}

/**
 * A Go (RE2) regular expression as JavaScript runs it: unanchored, as Go's MatchString; leading flag
 * groups (`(?i)`, `(?s)`, `(?m)`) become flags. The config schema refuses one JavaScript cannot compile.
 */
export function goRegExp(regex: string): RegExp {
  const flags = /^\(\?([ims]+)\)/.exec(regex);
  return flags ? new RegExp(regex.slice(flags[0].length), `${[...new Set(flags[1])].join('')}u`) : new RegExp(regex, 'u');
}
