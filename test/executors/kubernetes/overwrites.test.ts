/**
 * What a job may change of [runners.kubernetes] through its variables, bounded as GitLab Runner 19
 * bounds it (no cluster needed: overwrites.ts and quantity.ts are pure).
 */
import { describe, expect, it } from 'vitest';
import { runnerSchema } from '../../../src/agent/config/schema.js';
import type { KubernetesOptions } from '../../../src/executors/kubernetes/options.js';
import { createOverwrites, serviceResources } from '../../../src/executors/kubernetes/overwrites.js';
import { compareQuantities, parseQuantity } from '../../../src/executors/kubernetes/quantity.js';

function options(table: Record<string, unknown> = {}): KubernetesOptions {
  return runnerSchema.parse({ url: 'http://127.0.0.1:1/', token: 't', executor: 'kubernetes', kubernetes: table }).kubernetes;
}

function overwrites(table: Record<string, unknown>, variables: Record<string, string>) {
  const lines: string[] = [];
  const result = createOverwrites(options(table), Object.entries(variables).map(([key, value]) => ({ key, value })), (line) => lines.push(line));
  return { ...result, lines };
}

describe('Kubernetes quantities', () => {
  it('compare as Kubernetes compares them', () => {
    const cmp = (a: string, b: string) => compareQuantities(parseQuantity(a)!, parseQuantity(b)!);
    expect(cmp('1000m', '1')).toBe(0);
    expect(cmp('1.5', '1500m')).toBe(0);
    expect(cmp('1Gi', '1G')).toBe(1);
    expect(cmp('512Mi', '0.5Gi')).toBe(0);
    expect(cmp('1e3', '1k')).toBe(0);
    expect(cmp('100m', '0.1')).toBe(0);
    expect(cmp('2', '3')).toBe(-1);
    expect(parseQuantity('lots')).toBeUndefined();
    expect(parseQuantity('1Gb')).toBeUndefined();
  });
});

describe('the job\'s overwrites', () => {
  it('takes a resource up to its *_overwrite_max_allowed, and says so as GitLab Runner does', () => {
    const o = overwrites({ cpu_limit: '1', cpu_limit_overwrite_max_allowed: '2', memory_request: '1Gi', memory_request_overwrite_max_allowed: '2Gi' }, { KUBERNETES_CPU_LIMIT: '1500m', KUBERNETES_MEMORY_REQUEST: '2Gi' });
    expect(o.build).toEqual({ limits: { cpu: '1500m' }, requests: { memory: '2Gi' } });
    expect(o.lines).toEqual(['"MemoryRequest" overwritten with "2Gi"', '"CPULimit" overwritten with "1500m"']);
  });

  it('refuses a resource above its bound with GitLab Runner\'s message', () => {
    expect(() => overwrites({ cpu_limit_overwrite_max_allowed: '2' }, { KUBERNETES_CPU_LIMIT: '3' })).toThrow(
      'couldn\'t prepare overwrites: invalid build limits specified: the resource "CPULimit" requested "3" is higher than limit allowed "2"',
    );
    expect(() => overwrites({ service_memory_request_overwrite_max_allowed: '1Gi' }, { KUBERNETES_SERVICE_MEMORY_REQUEST: '2Gi' })).toThrow('invalid service requests specified: the resource "ServiceMemoryRequest" requested "2Gi" is higher than limit allowed "1Gi"');
    expect(() => overwrites({ pod_cpu_request_overwrite_max_allowed: '1' }, { KUBERNETES_POD_CPU_REQUEST: '1001m' })).toThrow('invalid Pod requests specified: the resource "PodCPURequest" requested "1001m" is higher than limit allowed "1"');
    expect(() => overwrites({ ephemeral_storage_limit_overwrite_max_allowed: '1Gi' }, { KUBERNETES_EPHEMERAL_STORAGE_LIMIT: 'big' })).toThrow('invalid build limits specified: parsing resource limit');
  });

  it('ignores a resource variable without a bound: the runner\'s value stays', () => {
    const o = overwrites({ cpu_limit: '1' }, { KUBERNETES_CPU_LIMIT: '64' });
    expect(o.build.limits).toEqual({ cpu: '1' });
    expect(o.lines).toEqual([]);
  });

  it('takes namespace, service account and bearer token where allowed; refuses a value the regex does not match', () => {
    const o = overwrites(
      { namespace: 'ci', namespace_overwrite_allowed: '^ci-', service_account: 'default-sa', service_account_overwrite_allowed: '(?i)^BUILD', bearer_token: 't0', bearer_token_overwrite_allowed: true },
      { KUBERNETES_NAMESPACE_OVERWRITE: 'ci-team', KUBERNETES_SERVICE_ACCOUNT_OVERWRITE: 'builder', KUBERNETES_BEARER_TOKEN: 'secret-token' },
    );
    expect(o).toMatchObject({ namespace: 'ci-team', serviceAccount: 'builder', bearerToken: 'secret-token' });
    expect(o.lines).toEqual(['"BearerToken" overwritten with "XXXXXXXX..."', '"ServiceAccount" overwritten with "builder"', '"Namespace" overwritten with "ci-team"']);
    expect(() => overwrites({ namespace_overwrite_allowed: '^ci-' }, { KUBERNETES_NAMESPACE_OVERWRITE: 'kube-system' })).toThrow('couldn\'t prepare overwrites: provided value "kube-system" does not match "^ci-"');
    expect(overwrites({ namespace: 'ci' }, { KUBERNETES_NAMESPACE_OVERWRITE: 'kube-system' }).namespace).toBe('ci');
    expect(overwrites({ bearer_token: 't0' }, { KUBERNETES_BEARER_TOKEN: 'other' }).bearerToken).toBe('t0');
  });

  it('adds labels, annotations, node selectors and tolerations from KUBERNETES_*_ variables the regex allows', () => {
    const o = overwrites(
      {
        pod_labels: { team: 'a' }, pod_labels_overwrite_allowed: '.*', pod_annotations_overwrite_allowed: '^ci/',
        node_selector: { disk: 'hdd' }, node_selector_overwrite_allowed: '^disk=', node_tolerations_overwrite_allowed: '.*',
      },
      { KUBERNETES_POD_LABELS_1: 'team=b', KUBERNETES_POD_LABELS_2: 'env=x=y', KUBERNETES_POD_ANNOTATIONS_1: 'ci/note=hi', KUBERNETES_NODE_SELECTOR_DISK: 'disk=ssd', KUBERNETES_NODE_TOLERATIONS_1: 'dedicated=ci:NoSchedule', KUBERNETES_NODE_TOLERATIONS_2: 'spot' },
    );
    expect(o.podLabels).toEqual({ team: 'b', env: 'x=y' });
    expect(o.podAnnotations).toEqual({ 'ci/note': 'hi' });
    expect(o.nodeSelector).toEqual({ disk: 'ssd' });
    expect(o.nodeTolerations).toEqual({ 'dedicated=ci': 'NoSchedule', spot: '' });
    expect(o.lines).toContain('"PodLabels" "team" overwritten with "b"');
    expect(() => overwrites({ pod_labels_overwrite_allowed: '.*' }, { KUBERNETES_POD_LABELS_X: 'novalue' })).toThrow('provided value "novalue" does not match "k=v"');
    expect(() => overwrites({ node_selector_overwrite_allowed: '^disk=' }, { KUBERNETES_NODE_SELECTOR_X: 'zone=a' })).toThrow('provided value "zone=a" does not match "^disk="');
    expect(overwrites({ pod_labels: { a: '1' } }, { KUBERNETES_POD_LABELS_1: 'b=2' }).podLabels).toEqual({ a: '1' });
  });

  it('gives a service its own resources from its variables, within the same bounds', () => {
    const o = options({ service_cpu_limit: '1', service_cpu_limit_overwrite_max_allowed: '2' });
    const base = createOverwrites(o, [], () => undefined).service;
    expect(serviceResources(o, base, [{ key: 'KUBERNETES_SERVICE_CPU_LIMIT', value: '2' }], () => undefined)).toEqual({ limits: { cpu: '2' }, requests: {} });
    expect(serviceResources(o, base, [], () => undefined)).toBe(base);
    expect(() => serviceResources(o, base, [{ key: 'KUBERNETES_SERVICE_CPU_LIMIT', value: '3' }], () => undefined)).toThrow('higher than limit allowed "2"');
  });
});
