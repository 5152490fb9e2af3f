/**
 * GitLab Runner 19's [runners.kubernetes] keys in the job's pod, on the kit's real cluster, each group
 * in the pod as created and the job succeeding: resources and the job's overwrites of them, scheduling,
 * identity and security, metadata, volumes. The runner talks to the cluster through a recording proxy,
 * so the pod as sent is seen too: Kubernetes 1.20 drops what it does not know (pod-level resources,
 * AppArmor profiles, match_label_keys), the runner sends it for newer clusters.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeConfig, NodeV1Api, SchedulingV1Api } from '@kubernetes/client-node';
import type { TestServer } from '../../helpers/server.js';
import { cluster, K8S_IMAGES, skipKubernetes } from './cluster.js';
import { useKubernetesTestServer, useNamespace } from './jobs.js';
import { nothingLeft, runProxied } from './keys-jobs.js';
import { recordingProxy, type RecordingProxy } from './recording-proxy.js';

let t: TestServer;
let token: string;
useKubernetesTestServer((server, runnerToken) => {
  t = server;
  token = runnerToken;
});

const namespace = await useNamespace('ci-runner-test-keys-pod');
const PRIORITY = 'ci-runner-test-keys-pod';
const RUNTIME = 'ci-runner-test-keys-runc';
/** A claim of this run's own, bound to a volume of this run's own (a PV outlives its claim). */
const CLAIM = `claim-${Math.random().toString(36).slice(2, 8)}`;
let proxy: RecordingProxy;
let hostDir: string;

beforeAll(async () => {
  if (!cluster) return;
  proxy = await recordingProxy(cluster.api, readFileSync(cluster.caFile));
  const config = new KubeConfig();
  config.loadFromFile(cluster.kubeconfig);
  const ignoreExisting = (error: unknown) => {
    if ((error as { code?: number }).code !== 409) throw error;
  };
  await config.makeApiClient(SchedulingV1Api).createPriorityClass({ body: { metadata: { name: PRIORITY }, value: 1000 } }).catch(ignoreExisting);
  await config.makeApiClient(NodeV1Api).createRuntimeClass({ body: { metadata: { name: RUNTIME }, handler: 'runc' } }).catch(ignoreExisting);
  const core = cluster.core;
  await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: 'builder' } } }).catch(ignoreExisting);
  const dockerConfig = JSON.stringify({ auths: { 'registry.example.com': { auth: Buffer.from('u:p').toString('base64') } } });
  await core.createNamespacedSecret({ namespace, body: { metadata: { name: 'pull' }, type: 'kubernetes.io/dockerconfigjson', stringData: { '.dockerconfigjson': dockerConfig } } }).catch(ignoreExisting);
  await core.createNamespacedSecret({ namespace, body: { metadata: { name: 'keys' }, stringData: { 'id.txt': 'from the secret' } } }).catch(ignoreExisting);
  await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: 'conf' }, data: { 'a.txt': 'from the config map', 'b.txt': 'not mounted' } } }).catch(ignoreExisting);
  hostDir = await mkdtemp(join(tmpdir(), 'ci-runner-test-keys-'));
  await writeFile(join(hostDir, 'host.txt'), 'from the host\n');
  await core.createPersistentVolume({ body: { metadata: { name: `${namespace}-${CLAIM}` }, spec: { capacity: { storage: '10Mi' }, accessModes: ['ReadWriteOnce'], storageClassName: '', hostPath: { path: hostDir }, persistentVolumeReclaimPolicy: 'Retain' } } });
  await core.createNamespacedPersistentVolumeClaim({ namespace, body: { metadata: { name: CLAIM }, spec: { accessModes: ['ReadWriteOnce'], storageClassName: '', volumeName: `${namespace}-${CLAIM}`, resources: { requests: { storage: '10Mi' } } } } });
}, 120_000);

afterAll(async () => {
  if (!cluster) return;
  await proxy.close();
  const config = new KubeConfig();
  config.loadFromFile(cluster.kubeconfig);
  await config.makeApiClient(SchedulingV1Api).deletePriorityClass({ name: PRIORITY }).catch(() => undefined);
  await config.makeApiClient(NodeV1Api).deleteRuntimeClass({ name: RUNTIME }).catch(() => undefined);
  await cluster.core.deleteNamespacedPersistentVolumeClaim({ name: CLAIM, namespace }).catch(() => undefined);
  await cluster.core.deletePersistentVolume({ name: `${namespace}-${CLAIM}` }).catch(() => undefined);
});

const run = (script: string[], kubernetes: Record<string, unknown>, variables: Record<string, string> = {}, job = '') => runProxied({ t, token, namespace, proxy }, script, kubernetes, variables, job);

describe.skipIf(skipKubernetes)('[runners.kubernetes] keys in the job\'s pod', () => {
  it('resources: the containers\' and the pod\'s, the job\'s overwrites within *_overwrite_max_allowed, refused above them', async () => {
    const kubernetes = {
      cpu_request: '10m', cpu_limit: '500m', cpu_limit_overwrite_max_allowed: '1', memory_request: '16Mi', memory_limit: '128Mi', memory_limit_overwrite_max_allowed: '256Mi',
      ephemeral_storage_request: '1Mi', ephemeral_storage_limit: '1Gi', service_cpu_request: '5m', service_memory_limit: '64Mi', service_memory_limit_overwrite_max_allowed: '96Mi',
      pod_cpu_limit: '2', pod_memory_limit: '1Gi', services: [K8S_IMAGES.httpd],
    };
    const job = await run(['echo resources asked'], kubernetes, { KUBERNETES_CPU_LIMIT: '750m', KUBERNETES_MEMORY_LIMIT: '192Mi', KUBERNETES_SERVICE_MEMORY_LIMIT: '96Mi' });
    expect(job.status, job.trace).toBe('success');
    expect(job.trace).toContain('"CPULimit" overwritten with "750m"');
    expect(job.trace).toContain('"MemoryLimit" overwritten with "192Mi"');
    expect(job.trace).not.toContain('is not honoured by this runner');
    const [build, service] = job.pod!.created!.spec!.containers;
    expect(build!.resources).toEqual({ limits: { cpu: '750m', memory: '192Mi', 'ephemeral-storage': '1Gi' }, requests: { cpu: '10m', memory: '16Mi', 'ephemeral-storage': '1Mi' } });
    expect(service!.resources).toEqual({ limits: { memory: '96Mi' }, requests: { cpu: '5m', memory: '96Mi' } });
    // Pod-level resources are Kubernetes 1.32+: sent, and dropped by 1.20.
    expect(job.pod!.sent.spec!.resources).toEqual({ limits: { cpu: '2', memory: '1Gi' } });
    expect(job.pod!.created!.spec!.resources).toBeUndefined();

    const refused = await run(['echo never'], kubernetes, { KUBERNETES_CPU_LIMIT: '2' });
    expect(refused.status).toBe('failed');
    expect(refused.trace).toContain('ERROR: Job failed: couldn\'t prepare overwrites: invalid build limits specified: the resource "CPULimit" requested "2" is higher than limit allowed "1"');
    expect(refused.pod).toBeUndefined();
    await nothingLeft(namespace, token, refused.id);
  });

  it('scheduling: node selector (and the job\'s, where allowed), tolerations, affinity, priority and runtime class, scheduler, host aliases, DNS', async () => {
    const kubernetes = {
      node_selector: { 'kubernetes.io/hostname': 'localhost' },
      node_selector_overwrite_allowed: '^kubernetes\\.io/os=',
      node_tolerations: { 'ci-runner-test/taint=yes': 'NoSchedule', 'ci-runner-test/any': '' },
      affinity: {
        node_affinity: { required_during_scheduling_ignored_during_execution: { node_selector_terms: [{ match_expressions: [{ key: 'kubernetes.io/os', operator: 'In', values: ['linux'] }] }] } },
        pod_anti_affinity: { preferred_during_scheduling_ignored_during_execution: [{ weight: 10, pod_affinity_term: { topology_key: 'kubernetes.io/hostname', label_selector: { match_labels: { 'ci-runner-test/none': 'x' } }, match_label_keys: ['ci-runner/job'] } }] },
      },
      priority_class_name: PRIORITY,
      runtime_class_name: RUNTIME,
      scheduler_name: 'default-scheduler',
      host_aliases: [{ ip: '10.0.0.7', hostnames: ['artifacts.internal'] }],
      dns_policy: 'none',
      dns_config: { nameservers: ['10.244.0.1'], searches: ['ci.example'], options: [{ name: 'ndots', value: '2' }] },
    };
    const job = await run(['cat /etc/hosts /etc/resolv.conf'], kubernetes, { KUBERNETES_NODE_SELECTOR_OS: 'kubernetes.io/os=linux' });
    expect(job.status, job.trace).toBe('success');
    expect(job.trace).toMatch(/10\.0\.0\.7\s+artifacts\.internal/);
    expect(job.trace).toContain('nameserver 10.244.0.1');
    expect(job.trace).toContain('search ci.example');
    expect(job.trace).toContain('options ndots:2');
    const spec = job.pod!.created!.spec!;
    expect(spec).toMatchObject({
      nodeSelector: { 'kubernetes.io/hostname': 'localhost', 'kubernetes.io/os': 'linux' },
      priorityClassName: PRIORITY, priority: 1000, runtimeClassName: RUNTIME, schedulerName: 'default-scheduler', dnsPolicy: 'None',
      affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/os', operator: 'In', values: ['linux'] }] }] } } },
    });
    expect(spec.tolerations).toEqual(expect.arrayContaining([{ key: 'ci-runner-test/taint', operator: 'Equal', value: 'yes', effect: 'NoSchedule' }, { key: 'ci-runner-test/any', operator: 'Exists' }]));
    // matchLabelKeys is Kubernetes 1.29+: sent, and dropped by 1.20.
    expect(job.pod!.sent.spec!.affinity!.podAntiAffinity!.preferredDuringSchedulingIgnoredDuringExecution![0]!.podAffinityTerm.matchLabelKeys).toEqual(['ci-runner/job']);
    expect(spec.affinity!.podAntiAffinity!.preferredDuringSchedulingIgnoredDuringExecution![0]!.podAffinityTerm.matchLabelKeys).toBeUndefined();
  });

  it('identity and security: service account, no token mounted, pull secrets checked, pod and container security contexts', async () => {
    const kubernetes = {
      service_account: 'builder',
      automount_service_account_token: false,
      image_pull_secrets: ['pull'],
      resource_availability_check_max_attempts: 1,
      allow_privilege_escalation: true,
      pod_security_context: { run_as_user: 1000, run_as_group: 1000, fs_group: 2000, supplemental_groups: [3000], seccomp_profile: { type: 'RuntimeDefault' }, app_armor_profile: { type: 'RuntimeDefault' } },
      build_container_security_context: { allow_privilege_escalation: false, capabilities: { drop: ['ALL'] } },
    };
    const job = await run(['id -u; id -G', 'ls /var/run/secrets/kubernetes.io/serviceaccount 2>/dev/null || echo no token mounted', 'grep -E "CapEff|NoNewPrivs" /proc/self/status'], kubernetes);
    expect(job.status, job.trace).toBe('success');
    expect(job.trace).toMatch(/\n1000\n1000 2000 3000\n/);
    expect(job.trace).toContain('no token mounted');
    expect(job.trace).toMatch(/CapEff:\s+0000000000000000/);
    expect(job.trace).toMatch(/NoNewPrivs:\s+1/);
    const spec = job.pod!.created!.spec!;
    expect(spec).toMatchObject({ serviceAccountName: 'builder', automountServiceAccountToken: false, imagePullSecrets: [{ name: 'pull' }], securityContext: { runAsUser: 1000, runAsGroup: 1000, fsGroup: 2000, supplementalGroups: [3000], seccompProfile: { type: 'RuntimeDefault' } } });
    expect(spec.containers[0]!.securityContext).toEqual({ capabilities: { drop: ['ALL'] }, allowPrivilegeEscalation: false, runAsUser: 1000, runAsGroup: 1000 });
    // AppArmor profiles in the security context are Kubernetes 1.30+: sent, and dropped by 1.20.
    expect(job.pod!.sent.spec!.securityContext!.appArmorProfile).toEqual({ type: 'RuntimeDefault' });
    expect(spec.securityContext!.appArmorProfile).toBeUndefined();

    // The job's kubernetes: user, as allowed_users and allowed_groups allow it (GitLab Runner: a refused one is warned about, not used).
    const asUser = (user: string) => `  image:\n    name: ${K8S_IMAGES.sh}\n    kubernetes:\n      user: "${user}"\n`;
    const allowed = await run(['echo "as $(id -u):$(id -g)"'], { allowed_users: ['1000'], allowed_groups: ['1000'] }, {}, asUser('1000:1000'));
    expect(allowed.status, allowed.trace).toBe('success');
    expect(allowed.trace).toContain('as 1000:1000');
    const refused = await run(['echo "as $(id -u)"'], { allowed_users: ['1000'] }, {}, asUser('0'));
    expect(refused.status, refused.trace).toBe('success');
    expect(refused.trace).toContain('Error parsing \'uid\' from image options for container "build", using the configured security context: validating UID: user "0" is not in the allowed list: [1000]');
    expect(refused.pod!.created!.spec!.containers[0]!.securityContext!.runAsUser).toBeUndefined();
    const pinned = await run(['echo "as $(id -u)"'], { build_container_security_context: { run_as_user: 1000 } }, {}, asUser('2000'));
    expect(pinned.trace).toContain('Overriding user for container "build" to "2000" is not allowed: user is set to 1000 in container security context');
    expect(pinned.trace).toContain('as 1000');

    const missing = await run(['echo never'], { image_pull_secrets: ['nowhere'], resource_availability_check_max_attempts: 1 });
    expect(missing.status).toBe('failed');
    expect(missing.trace).toContain('ERROR: Job failed: Timed out while waiting for ImagePullSecret/nowhere to be present in the cluster');
    expect(missing.pod).toBeUndefined();
  });

  it('metadata: pod labels and annotations with the job\'s variables and its overwrites, GitLab Runner\'s own, ci-runner\'s kept', async () => {
    const kubernetes = {
      pod_labels: { team: 'platform', job: 'job-${CI_JOB_ID}', 'ci-runner/job': 'spoofed' },
      pod_labels_overwrite_allowed: '^(extra|team)=',
      pod_annotations: { 'ci/note': 'ran ${CI_JOB_NAME}' },
      pod_annotations_overwrite_allowed: '^ci/',
    };
    const job = await run(['echo labelled'], kubernetes, { KUBERNETES_POD_LABELS_1: 'extra=yes', KUBERNETES_POD_ANNOTATIONS_1: 'ci/more=from the job' });
    expect(job.status, job.trace).toBe('success');
    expect(job.trace).toContain('"PodLabels" "extra" overwritten with "yes"');
    expect(job.trace).toContain('not setting pod label "ci-runner/job"');
    const meta = job.pod!.created!.metadata!;
    expect(meta.labels).toMatchObject({ team: 'platform', job: `job-${job.id}`, extra: 'yes', 'ci-runner/job': String(job.id), 'project.runner.gitlab.com/name': 'project', 'manager.runner.gitlab.com/name': 'k8s-test' });
    expect(meta.annotations).toMatchObject({ 'ci/note': 'ran j', 'ci/more': 'from the job', 'job.runner.gitlab.com/id': String(job.id), 'job.runner.gitlab.com/name': 'j', 'job.runner.gitlab.com/ref': 'main' });
  });

  it('volumes: host path, PVC, ConfigMap items, Secret, an emptyDir in memory, paths with the job\'s variables', async () => {
    const kubernetes = {
      volumes: {
        host_path: [{ name: 'host', mount_path: '/mnt/host', host_path: hostDir, read_only: true }],
        pvc: [{ name: CLAIM, mount_path: '/mnt/claim-$CI_JOB_NAME' }],
        config_map: [{ name: 'conf', mount_path: '/mnt/conf', items: { 'a.txt': 'renamed.txt' } }],
        secret: [{ name: 'keys', mount_path: '/mnt/keys/id.txt', sub_path: 'id.txt', read_only: true }],
        empty_dir: [{ name: 'scratch', mount_path: '/mnt/scratch', medium: 'Memory', size_limit: '16Mi' }],
      },
    };
    const script = ['cat /mnt/host/host.txt /mnt/conf/renamed.txt /mnt/keys/id.txt; echo', 'ls /mnt/conf', 'touch /mnt/host/x 2>/dev/null || echo host path read-only', 'echo written > /mnt/claim-j/pvc.txt', 'grep " /mnt/scratch " /proc/mounts'];
    const job = await run(script, kubernetes);
    expect(job.status, job.trace).toBe('success');
    expect(job.trace).toContain('from the host');
    expect(job.trace).toContain('from the config map');
    expect(job.trace).toContain('from the secret');
    expect(job.trace).toMatch(/\nrenamed\.txt\n/);
    expect(job.trace).toContain('host path read-only');
    expect(job.trace).toMatch(/tmpfs \/mnt\/scratch tmpfs/);
    expect(readFileSync(join(hostDir, 'pvc.txt'), 'utf8')).toBe('written\n');
    const spec = job.pod!.created!.spec!;
    expect(spec.volumes).toEqual(expect.arrayContaining([expect.objectContaining({ name: CLAIM, persistentVolumeClaim: { claimName: CLAIM } }), expect.objectContaining({ name: 'scratch', emptyDir: { medium: 'Memory', sizeLimit: '16Mi' } })]));
    expect(spec.containers[0]!.volumeMounts).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'keys', mountPath: '/mnt/keys/id.txt', subPath: 'id.txt', readOnly: true })]));
  });
});
