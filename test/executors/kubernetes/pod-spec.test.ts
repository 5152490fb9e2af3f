/**
 * The job's pod as `[runners.kubernetes]` describes it, and how a pod's status is judged while it
 * starts (no cluster needed: both are pure).
 */
import { describe, expect, it } from 'vitest';
import type { V1Pod } from '@kubernetes/client-node';
import { runnerSchema } from '../../../src/agent/config/schema.js';
import type { BuildPayload } from '../../../src/protocol/types.js';
import type { ExportedVariable, PrepareRequest } from '../../../src/executors/types.js';
import { planJob } from '../../../src/executors/kubernetes/job-plan.js';
import type { KubernetesOptions } from '../../../src/executors/kubernetes/options.js';
import { judgePod } from '../../../src/executors/kubernetes/pod-wait.js';
import { podSpec, serviceContainerNames, serviceHostnames, WAITING_SHELL } from '../../../src/executors/kubernetes/pod-spec.js';

function options(table: Record<string, unknown> = {}): KubernetesOptions {
  return runnerSchema.parse({ url: 'http://127.0.0.1:1/', token: 't', executor: 'kubernetes', kubernetes: table }).kubernetes;
}

interface JobShape {
  options?: Partial<BuildPayload['options']>;
  variables?: Record<string, string>;
}

/** The pod a job gets on a runner with `table`, and what the job log heard. */
function jobPod(table: Record<string, unknown> = {}, job: JobShape = {}) {
  const o = options({ image: 'alpine:3', ...table });
  const lines: string[] = [];
  const variables: ExportedVariable[] = Object.entries({ CI_JOB_URL: 'https://gitlab.example.com/g/p/-/jobs/7', CI_PROJECT_NAMESPACE: 'g', ...job.variables }).map(([key, value]) => ({ key, value }));
  const build = { id: 7, name: 'test job', sha: 'abc', before_sha: '000', ref: 'main', project_id: 3, project_name: 'p', timeout: 3600, token: 'jt', credentials: [], options: { ...job.options } } as unknown as BuildPayload;
  const request = { build, slot: 0, variables, slotDir: '/b/0', projectDir: '/b/0/g/p', stateDir: '/b/0/.s', log: (l: string) => lines.push(l), warn: (l: string) => lines.push(l), signal: new AbortController().signal } as PrepareRequest;
  const plan = planJob({ o, request, owner: { id: 'host' }, runnerToken: 'tok', runnerName: 'k8s runner', terminationGraceSeconds: 3 });
  return { pod: podSpec(plan.pod, o, {}), plan, lines, o };
}

describe('the job pod', () => {
  it('keeps the image ENTRYPOINT and gives it the waiting shell; image:entrypoint replaces it, [""] removes it', () => {
    const build = (entrypoint?: string[]) => jobPod({}, { options: entrypoint ? { imageEntrypoint: entrypoint } : {} }).pod.spec!.containers[0]!;
    expect(build()).toMatchObject({ name: 'build', image: 'alpine:3', args: WAITING_SHELL });
    expect(build().command).toBeUndefined();
    expect(build(['/init', '--quiet'])).toMatchObject({ command: ['/init', '--quiet'], args: WAITING_SHELL });
    expect(build([''])).toMatchObject({ command: WAITING_SHELL });
    expect(build(['']).args).toBeUndefined();
  });

  it('applies resources, pull policy, account, selectors, tolerations, labels, privileged and volumes', () => {
    const { pod } = jobPod(
      {
        cpu_limit: '2', memory_limit: '1Gi', cpu_request: '500m', memory_request: 256, ephemeral_storage_limit: '5Gi',
        service_cpu_limit: '250m', service_memory_request: '64Mi', pod_cpu_limit: '3', pod_memory_request: '2Gi',
        service_account: 'builder', image_pull_secrets: ['regcred'], privileged: true, pull_policy: 'if-not-present',
        node_selector: { 'kubernetes.io/arch': 'amd64' },
        node_tolerations: { 'dedicated=ci': 'NoSchedule', spot: '' },
        pod_labels: { team: 'a', 'ci-runner/job': 'spoofed', 'project.runner.gitlab.com/id': 'spoofed', job: 'j-${CI_PROJECT_NAMESPACE}' },
        pod_annotations: { note: 'in ${CI_PROJECT_NAMESPACE}' },
        services: ['redis:7'],
        volumes: {
          host_path: [{ name: 'docker', mount_path: '/var/run/docker.sock', read_only: true, mount_propagation: 'HostToContainer' }],
          pvc: [{ name: 'cache', mount_path: '/cache' }, { name: 'cache', mount_path: '/cache2', sub_path: 'b' }],
          config_map: [{ name: 'conf', mount_path: '/conf', items: { 'a.txt': 'renamed.txt' } }],
          secret: [{ name: 'keys', mount_path: '/keys', read_only: true }],
          empty_dir: [{ name: 'scratch', mount_path: '/scratch', medium: 'Memory', size_limit: '1Gi' }],
          csi: [{ name: 'store', mount_path: '/store', driver: 'secrets-store.csi.k8s.io', read_only: true, volume_attributes: { c: 'x' } }],
          nfs: [{ name: 'share', mount_path: '/share', server: 'nfs.local', path: '/export' }],
        },
      },
    );
    const [build, service] = pod.spec!.containers;
    expect(build).toMatchObject({
      imagePullPolicy: 'IfNotPresent',
      securityContext: { privileged: true, capabilities: { drop: ['NET_RAW'] } },
      resources: { limits: { cpu: '2', memory: '1Gi', 'ephemeral-storage': '5Gi' }, requests: { cpu: '500m', memory: '256' } },
    });
    expect(service).toMatchObject({ name: 'svc-0', image: 'redis:7', imagePullPolicy: 'IfNotPresent', resources: { limits: { cpu: '250m' }, requests: { memory: '64Mi' } } });
    expect(pod.metadata!.labels).toMatchObject({
      team: 'a', job: 'j-g', 'ci-runner/job': '7', 'project.runner.gitlab.com/id': '3', 'manager.runner.gitlab.com/name': 'k8s_runner',
      pod: 'runner-tok-project-3-concurrent-0', 'job.runner.gitlab.com/pod': 'runner-tok-project-3-concurrent-0', 'manager.runner.gitlab.com/id-short': 'tok',
    });
    expect(pod.metadata!.name).toMatch(/^runner-tok-project-3-concurrent-0-[a-z0-9]{8}$/);
    expect(pod.metadata!.annotations).toMatchObject({ note: 'in g', 'job.runner.gitlab.com/id': '7', 'job.runner.gitlab.com/timeout': '1h0m0s', 'job.runner.gitlab.com/url': 'https://gitlab.example.com/g/p/-/jobs/7' });
    expect(pod.spec).toMatchObject({
      restartPolicy: 'Never', terminationGracePeriodSeconds: 3, serviceAccountName: 'builder', nodeSelector: { 'kubernetes.io/arch': 'amd64' },
      imagePullSecrets: [{ name: 'regcred' }], dnsPolicy: 'ClusterFirst',
      resources: { limits: { cpu: '3' }, requests: { memory: '2Gi' } },
      tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'ci', effect: 'NoSchedule' }, { key: 'spot', operator: 'Exists' }],
    });
    expect(pod.spec!.volumes).toEqual([
      { name: 'ci-runner-builds', emptyDir: {} },
      { name: 'docker', hostPath: { path: '/var/run/docker.sock' } },
      { name: 'keys', secret: { secretName: 'keys' } },
      { name: 'cache', persistentVolumeClaim: { claimName: 'cache' } },
      { name: 'conf', configMap: { name: 'conf', items: [{ key: 'a.txt', path: 'renamed.txt' }] } },
      { name: 'scratch', emptyDir: { medium: 'Memory', sizeLimit: '1Gi' } },
      { name: 'store', csi: { driver: 'secrets-store.csi.k8s.io', fsType: '', readOnly: true, volumeAttributes: { c: 'x' } } },
      { name: 'share', nfs: { server: 'nfs.local', path: '/export' } },
    ]);
    expect(build!.volumeMounts).toContainEqual({ name: 'docker', mountPath: '/var/run/docker.sock', readOnly: true, mountPropagation: 'HostToContainer' });
    expect(build!.volumeMounts).toContainEqual({ name: 'cache', mountPath: '/cache2', subPath: 'b' });
    expect(build!.volumeMounts).toContainEqual({ name: 'ci-runner-builds', mountPath: '/builds' });
    expect(service!.volumeMounts).not.toContainEqual(expect.objectContaining({ name: 'ci-runner-builds' }));
  });

  it('lets a volume at /builds replace the pod\'s own emptyDir for the checkout, with the job\'s variables expanded in paths', () => {
    const { pod } = jobPod({ volumes: { empty_dir: [{ name: 'repo', mount_path: '/builds', medium: 'Memory' }], pvc: [{ name: 'cache-$CI_RUNNER_SLOT', mount_path: '/cache/$CI_PROJECT_NAMESPACE' }] } }, { variables: { CI_RUNNER_SLOT: '4' } });
    expect(pod.spec!.volumes!.map((v) => v.name)).toEqual(['cache-4', 'repo']);
    expect(pod.spec!.containers[0]!.volumeMounts).toEqual([{ name: 'cache-4', mountPath: '/cache/g' }, { name: 'repo', mountPath: '/builds' }]);
  });

  it('sets scheduling, identity and DNS fields as GitLab Runner does', () => {
    const { pod } = jobPod({
      scheduler_name: 'custom', priority_class_name: 'high', runtime_class_name: 'gvisor', automount_service_account_token: false,
      dns_policy: 'none', dns_config: { nameservers: ['1.1.1.1'], options: [{ name: 'ndots', value: '2' }, { name: 'edns0' }] },
      host_aliases: [{ ip: '10.0.0.1', hostnames: ['a.internal'] }],
      affinity: {
        node_affinity: { required_during_scheduling_ignored_during_execution: { node_selector_terms: [{ match_expressions: [{ key: 'disk', operator: 'In', values: ['ssd'] }] }] } },
        pod_anti_affinity: { preferred_during_scheduling_ignored_during_execution: [{ weight: 5, pod_affinity_term: { topology_key: 'kubernetes.io/hostname', label_selector: { match_labels: { a: 'b' } } } }] },
      },
      pod_security_context: { run_as_user: 1000, fs_group: 2000, supplemental_groups: [3000], app_armor_profile: { type: 'RuntimeDefault' } },
      container_lifecycle: { pre_stop: { exec: { command: ['sh', '-c', 'sync'] } }, post_start: { tcp_socket: { port: 80 } } },
      use_service_account_image_pull_secrets: true, image_pull_secrets: ['ignored'],
    });
    expect(pod.spec).toMatchObject({
      schedulerName: 'custom', priorityClassName: 'high', runtimeClassName: 'gvisor', automountServiceAccountToken: false,
      dnsPolicy: 'None', dnsConfig: { nameservers: ['1.1.1.1'], options: [{ name: 'ndots', value: '2' }, { name: 'edns0' }] },
      hostAliases: [{ ip: '10.0.0.1', hostnames: ['a.internal'] }],
      affinity: {
        nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'disk', operator: 'In', values: ['ssd'] }] }] } },
        podAntiAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 5, podAffinityTerm: { topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: { a: 'b' } } } }] },
      },
      securityContext: { runAsUser: 1000, fsGroup: 2000, supplementalGroups: [3000], appArmorProfile: { type: 'RuntimeDefault' } },
    });
    expect(pod.spec!.imagePullSecrets).toBeUndefined();
    expect(pod.spec!.containers[0]).toMatchObject({ lifecycle: { preStop: { exec: { command: ['sh', '-c', 'sync'] } }, postStart: { tcpSocket: { port: 80 } } }, securityContext: { runAsUser: 1000 } });
  });

  it('builds each container\'s security context from its table over the runner-wide keys; NET_RAW dropped unless added', () => {
    const context = (table: Record<string, unknown>) => jobPod(table).pod.spec!.containers[0]!.securityContext;
    expect(context({})).toEqual({ capabilities: { drop: ['NET_RAW'] } });
    expect(context({ cap_add: ['NET_RAW', 'SYS_TIME'], cap_drop: ['MKNOD'], allow_privilege_escalation: false })).toEqual({ capabilities: { add: ['NET_RAW', 'SYS_TIME'], drop: ['MKNOD'] }, allowPrivilegeEscalation: false });
    expect(context({ privileged: true, cap_drop: ['MKNOD'], build_container_security_context: { privileged: false, capabilities: { drop: ['ALL'] }, run_as_non_root: true, read_only_root_filesystem: true, proc_mount: 'Unmasked', selinux_type: 'spc_t', seccomp_profile: { type: 'Localhost', localhost_profile: 'p.json' } } })).toEqual({
      capabilities: { drop: ['ALL'] }, privileged: false, runAsNonRoot: true, readOnlyRootFilesystem: true, procMount: 'Unmasked', seLinuxOptions: { type: 'spc_t' }, seccompProfile: { type: 'Localhost', localhostProfile: 'p.json' },
    });
    const services = jobPod({ services: [{ name: 'db:1', alias: 'db' }], service_container_security_context: { run_as_user: 999 } }).pod.spec!.containers;
    expect(services[1]).toMatchObject({ name: 'db', securityContext: { runAsUser: 999, capabilities: { drop: ['NET_RAW'] } } });
  });

  it('names service containers as GitLab Runner does, and keeps only the names Kubernetes accepts as host names', () => {
    expect(serviceContainerNames([{}, { alias: 'db' }, { alias: 'db,cache' }, { alias: 'Bad_Alias' }, {}])).toEqual(['svc-0', 'db', 'cache', 'svc-1', 'svc-2']);
    expect(serviceHostnames(['registry.example.com__group__redis', 'registry.example.com-group-redis', 'db', 'Bad_Alias'])).toEqual({ valid: ['registry.example.com-group-redis', 'db'], refused: ['registry.example.com__group__redis', 'Bad_Alias'] });
  });

  it('gives each container its effective pull policies, and refuses a job\'s policy the runner does not allow, as GitLab Runner words it', () => {
    const { plan, lines } = jobPod({ pull_policy: ['always', 'if-not-present'], services: ['db:1'] }, { options: { imagePullPolicy: ['if-not-present'] } });
    expect(plan.pod.pullPolicies).toEqual(['if-not-present']);
    expect(plan.pod.services[0]!.pullPolicies).toEqual(['always', 'if-not-present']);
    expect(lines).toContain('Using effective pull policy of [IfNotPresent] for container build');
    expect(lines).toContain('Using effective pull policy of [Always IfNotPresent] for container svc-0');
    expect(() => jobPod({}, { options: { imagePullPolicy: ['always'] } })).toThrow('invalid pull policy for container "build": pull_policy ([Always]) defined in GitLab pipeline config is not one of the allowed_pull_policies ([])');
    expect(() => jobPod({ pull_policy: 'never', allowed_pull_policies: ['always'] })).toThrow('pull_policy ([Never]) defined in Runner config is not one of the allowed_pull_policies ([Always])');
    expect(jobPod({ allowed_pull_policies: ['always', 'never'] }, { options: { imagePullPolicy: ['if-not-present', 'never'] } }).plan.pod.pullPolicies).toEqual(['never']);
  });

  it('refuses an image or service the runner does not allow, but never the runner\'s own', () => {
    expect(() => jobPod({ allowed_images: ['debian:*'] }, { options: { image: 'alpine:edge' } })).toThrow(`disallowed image: "alpine:edge" is not on the runner's allowed_images`);
    expect(jobPod({ image: 'alpine:3', allowed_images: ['debian:*'] }).pod.spec!.containers[0]!.image).toBe('alpine:3');
    expect(() => jobPod({ allowed_services: ['redis:*'] }, { options: { services: ['postgres:16'] } })).toThrow(`disallowed image: "postgres:16" is not on the runner's allowed_services`);
    expect(jobPod({ allowed_services: ['redis:*'], services: ['postgres:16'] }).pod.spec!.containers[1]!.image).toBe('postgres:16');
  });

  it('gives a runner service its environment, $ kept literal', () => {
    const { pod } = jobPod({ services: [{ name: 'redis:7', environment: ['A=1', 'B=$(x) $y'] }] });
    expect(pod.spec!.containers[1]!.env).toEqual([{ name: 'A', value: '1' }, { name: 'B', value: '$$(x) $$y' }]);
  });
});

describe('a starting pod, judged', () => {
  const pod = (status: V1Pod['status'], containers = ['build']): V1Pod => ({ spec: { containers: containers.map((name) => ({ name })) }, status });

  it('runs once the build container and every service run', () => {
    expect(judgePod(pod({ phase: 'Running', containerStatuses: [{ name: 'build', state: { running: {} } } as never, { name: 'svc-0', state: { waiting: { reason: 'ContainerCreating' } } } as never] }, ['build', 'svc-0'])).kind).toBe('waiting');
    expect(judgePod(pod({ phase: 'Running', containerStatuses: [{ name: 'build', state: { running: {} } } as never, { name: 'svc-0', image: 'db:1', state: { terminated: { exitCode: 1 } } } as never] }, ['build', 'svc-0']))).toEqual({ kind: 'running', exited: [{ container: 'svc-0', detail: 'db:1 exited with code 1' }] });
  });

  it('fails at once on an image that may not be pulled, and hands a failed pull to the next pull policy', () => {
    const waiting = (reason: string) => pod({ phase: 'Pending', containerStatuses: [{ name: 'build', image: 'x:1', state: { waiting: { reason, message: 'the kubelet says why' } } } as never] });
    expect(judgePod(waiting('ErrImageNeverPull'))).toEqual({ kind: 'failed', reason: 'build container: ErrImageNeverPull: the kubelet says why' });
    expect(judgePod(waiting('ImagePullBackOff'))).toEqual({ kind: 'pull-failed', reason: 'build container: ImagePullBackOff: the kubelet says why', container: 'build', image: 'x:1' });
    expect(judgePod(waiting('ContainerCreating'))).toEqual({ kind: 'waiting', reason: 'build: ContainerCreating: the kubelet says why' });
  });

  it('says why a pod is not scheduled', () => {
    const unscheduled = pod({ phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: '0/3 nodes are available: 3 Insufficient cpu.' }] });
    expect(judgePod(unscheduled)).toEqual({ kind: 'waiting', reason: 'Unschedulable: 0/3 nodes are available: 3 Insufficient cpu.' });
  });
});
