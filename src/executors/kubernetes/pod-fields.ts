/**
 * `[runners.kubernetes]` tables as the pod spec's fields, as GitLab Runner 19 turns them into them:
 * `affinity` (node, pod and pod anti-affinity), `node_tolerations`, `dns_policy`, `dns_config` and
 * `container_lifecycle`. Pure: no I/O.
 */
import type {
  V1Affinity,
  V1LabelSelector,
  V1Lifecycle,
  V1LifecycleHandler,
  V1NodeSelectorRequirement,
  V1NodeSelectorTerm,
  V1PodAffinity,
  V1PodAffinityTerm,
  V1PodDNSConfig,
  V1Toleration,
} from '@kubernetes/client-node';
import type { DnsPolicy, KubernetesOptions, LabelSelector, LifecycleHandlerOptions, NodeSelectorTerm, PodAffinity, PodAffinityTerm, SelectorRequirement } from './options.js';

/** `affinity`, or nothing when it names none of its three kinds. */
export function affinity(o: KubernetesOptions): V1Affinity | undefined {
  const { node_affinity: node, pod_affinity: pod, pod_anti_affinity: anti } = o.affinity;
  if (!node && !pod && !anti) return undefined;
  const required = node?.required_during_scheduling_ignored_during_execution;
  return {
    ...(node
      ? {
          nodeAffinity: {
            ...(required ? { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: required.node_selector_terms.map(nodeSelectorTerm) } } : {}),
            ...(node.preferred_during_scheduling_ignored_during_execution.length > 0
              ? { preferredDuringSchedulingIgnoredDuringExecution: node.preferred_during_scheduling_ignored_during_execution.map((p) => ({ weight: p.weight, preference: nodeSelectorTerm(p.preference) })) }
              : {}),
          },
        }
      : {}),
    ...(pod ? { podAffinity: podAffinity(pod) } : {}),
    ...(anti ? { podAntiAffinity: podAffinity(anti) } : {}),
  };
}

function podAffinity(a: PodAffinity): V1PodAffinity {
  return {
    ...(a.required_during_scheduling_ignored_during_execution.length > 0 ? { requiredDuringSchedulingIgnoredDuringExecution: a.required_during_scheduling_ignored_during_execution.map(podAffinityTerm) } : {}),
    ...(a.preferred_during_scheduling_ignored_during_execution.length > 0
      ? { preferredDuringSchedulingIgnoredDuringExecution: a.preferred_during_scheduling_ignored_during_execution.map((p) => ({ weight: p.weight, podAffinityTerm: podAffinityTerm(p.pod_affinity_term) })) }
      : {}),
  };
}

function podAffinityTerm(t: PodAffinityTerm): V1PodAffinityTerm {
  return {
    topologyKey: t.topology_key,
    ...(t.label_selector ? { labelSelector: labelSelector(t.label_selector) } : {}),
    ...(t.namespace_selector ? { namespaceSelector: labelSelector(t.namespace_selector) } : {}),
    ...(t.namespaces.length > 0 ? { namespaces: [...t.namespaces] } : {}),
    ...(t.match_label_keys.length > 0 ? { matchLabelKeys: [...t.match_label_keys] } : {}),
    ...(t.mismatch_label_keys.length > 0 ? { mismatchLabelKeys: [...t.mismatch_label_keys] } : {}),
  };
}

function labelSelector(s: LabelSelector): V1LabelSelector {
  return {
    ...(Object.keys(s.match_labels).length > 0 ? { matchLabels: { ...s.match_labels } } : {}),
    ...(s.match_expressions.length > 0 ? { matchExpressions: s.match_expressions.map(requirement) } : {}),
  };
}

function nodeSelectorTerm(t: NodeSelectorTerm): V1NodeSelectorTerm {
  return {
    ...(t.match_expressions.length > 0 ? { matchExpressions: t.match_expressions.map(requirement) } : {}),
    ...(t.match_fields.length > 0 ? { matchFields: t.match_fields.map(requirement) } : {}),
  };
}

function requirement(r: SelectorRequirement): V1NodeSelectorRequirement {
  return { key: r.key, operator: r.operator, ...(r.values.length > 0 ? { values: [...r.values] } : {}) };
}

/** GitLab Runner's form: `"key=value" = "Effect"`, `"key" = "Effect"` (any value), effect `""` = any. */
export function tolerations(table: Readonly<Record<string, string>>): V1Toleration[] {
  return Object.entries(table).map(([spec, effect]) => {
    const eq = spec.indexOf('=');
    const base: V1Toleration = eq < 0 ? { key: spec, operator: 'Exists' } : { key: spec.slice(0, eq), operator: 'Equal', value: spec.slice(eq + 1) };
    return effect ? { ...base, effect } : base;
  });
}

const DNS_POLICY: Readonly<Record<DnsPolicy, string>> = { none: 'None', default: 'Default', 'cluster-first': 'ClusterFirst', 'cluster-first-with-host-net': 'ClusterFirstWithHostNet' };

/** `dns_policy` in Kubernetes' words; unset: ClusterFirst, as GitLab Runner sends it. */
export function dnsPolicy(o: KubernetesOptions): string {
  return DNS_POLICY[o.dns_policy ?? 'cluster-first'];
}

/** `dns_config`, or nothing when it is empty. */
export function dnsConfig(o: KubernetesOptions): V1PodDNSConfig | undefined {
  const { nameservers, searches, options } = o.dns_config;
  if (nameservers.length === 0 && searches.length === 0 && options.length === 0) return undefined;
  return {
    ...(nameservers.length > 0 ? { nameservers: [...nameservers] } : {}),
    ...(searches.length > 0 ? { searches: [...searches] } : {}),
    ...(options.length > 0 ? { options: options.map((opt) => ({ name: opt.name, ...(opt.value !== undefined ? { value: opt.value } : {}) })) } : {}),
  };
}

/** `container_lifecycle`, for every container of the pod; nothing when it names no hook. */
export function lifecycle(o: KubernetesOptions): V1Lifecycle | undefined {
  const { post_start: postStart, pre_stop: preStop } = o.container_lifecycle;
  if (!postStart && !preStop) return undefined;
  return { ...(postStart ? { postStart: handler(postStart) } : {}), ...(preStop ? { preStop: handler(preStop) } : {}) };
}

function handler(h: LifecycleHandlerOptions): V1LifecycleHandler {
  const get = h.http_get;
  return {
    ...(h.exec ? { exec: { command: [...h.exec.command] } } : {}),
    ...(get
      ? {
          httpGet: {
            port: get.port,
            ...(get.host ? { host: get.host } : {}),
            ...(get.path ? { path: get.path } : {}),
            ...(get.scheme ? { scheme: get.scheme } : {}),
            ...(get.http_headers.length > 0 ? { httpHeaders: get.http_headers.map((x) => ({ name: x.name, value: x.value })) } : {}),
          },
        }
      : {}),
    ...(h.tcp_socket ? { tcpSocket: { port: h.tcp_socket.port, ...(h.tcp_socket.host ? { host: h.tcp_socket.host } : {}) } } : {}),
  };
}
