/**
 * The job's pod as `[runners.kubernetes]` describes it, and how a pod's status is judged while it
 * starts (no cluster needed: both are pure).
 */
import { describe, expect, it } from 'vitest';
import type { V1Pod } from '@kubernetes/client-node';
import { runnerSchema } from '../../../src/agent/config/schema.js';
import type { KubernetesOptions } from '../../../src/executors/kubernetes/options.js';
import { judgePod } from '../../../src/executors/kubernetes/pod-wait.js';
import { podSpec, serviceHostnames, WAITING_SHELL, type PodPlan } from '../../../src/executors/kubernetes/pod-spec.js';

function options(table: Record<string, unknown> = {}): KubernetesOptions {
  return runnerSchema.parse({ url: 'http://127.0.0.1:1/', token: 't', executor: 'kubernetes', kubernetes: table }).kubernetes;
}

const plan: PodPlan = { name: 'ci-runner-1-abc', namespace: 'ci', labels: { 'ci-runner/job': '1' }, annotations: {}, image: 'alpine:3', services: [], terminationGraceSeconds: 3 };

describe('the job pod', () => {
  it('keeps the image ENTRYPOINT and gives it the waiting shell; image:entrypoint replaces it, [""] removes it', () => {
    const build = (entrypoint?: string[]) => podSpec({ ...plan, ...(entrypoint ? { entrypoint } : {}) }, options()).spec!.containers[0]!;
    expect(build()).toMatchObject({ name: 'build', image: 'alpine:3', args: WAITING_SHELL });
    expect(build().command).toBeUndefined();
    expect(build(['/init', '--quiet'])).toMatchObject({ command: ['/init', '--quiet'], args: WAITING_SHELL });
    expect(build([''])).toMatchObject({ command: WAITING_SHELL });
    expect(build(['']).args).toBeUndefined();
  });

  it('applies the runner\'s keys: resources, pull policy, account, selectors, tolerations, labels, privileged, volumes', () => {
    const o = options({
      cpu_limit: '2', memory_limit: '1Gi', cpu_request: '500m', memory_request: 256,
      service_cpu_limit: '250m', service_memory_request: '64Mi',
      service_account: 'builder', image_pull_secrets: ['regcred'], privileged: true,
      node_selector: { 'kubernetes.io/arch': 'amd64' },
      node_tolerations: { 'dedicated=ci': 'NoSchedule', 'spot': '' },
      pod_labels: { team: 'a', 'ci-runner/job': 'spoofed' }, pod_annotations: { note: 'x' },
      volumes: {
        host_path: [{ name: 'docker', mount_path: '/var/run/docker.sock', read_only: true }],
        pvc: [{ name: 'cache', mount_path: '/cache' }],
        config_map: [{ name: 'conf', mount_path: '/conf', items: { 'a.txt': 'renamed.txt' } }],
        secret: [{ name: 'keys', mount_path: '/keys', read_only: true }],
        empty_dir: [{ name: 'scratch', mount_path: '/scratch', medium: 'Memory', size_limit: '1Gi' }],
      },
    });
    const pod: V1Pod = podSpec({ ...plan, pullPolicy: 'if-not-present', registrySecret: 'job-registry', services: [{ name: 'redis:7', hostnames: ['redis', 'cache'] }], serviceEnvSecret: 'job-env' }, o);
    const [build, service] = pod.spec!.containers;
    expect(build).toMatchObject({ imagePullPolicy: 'IfNotPresent', securityContext: { privileged: true }, resources: { limits: { cpu: '2', memory: '1Gi' }, requests: { cpu: '500m', memory: '256' } } });
    expect(service).toMatchObject({ name: 'svc-0', image: 'redis:7', imagePullPolicy: 'IfNotPresent', envFrom: [{ secretRef: { name: 'job-env' } }], resources: { limits: { cpu: '250m' }, requests: { memory: '64Mi' } } });
    expect(service!.env).toBeUndefined();
    expect(pod.metadata!.labels).toEqual({ team: 'a', 'ci-runner/job': '1' });
    expect(pod.metadata!.annotations).toEqual({ note: 'x' });
    expect(pod.spec).toMatchObject({
      restartPolicy: 'Never', terminationGracePeriodSeconds: 3, serviceAccountName: 'builder', nodeSelector: { 'kubernetes.io/arch': 'amd64' },
      imagePullSecrets: [{ name: 'regcred' }, { name: 'job-registry' }],
      hostAliases: [{ ip: '127.0.0.1', hostnames: ['redis', 'cache'] }],
      tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'ci', effect: 'NoSchedule' }, { key: 'spot', operator: 'Exists' }],
    });
    expect(pod.spec!.volumes).toEqual([
      { name: 'ci-runner-builds', emptyDir: {} },
      { name: 'docker', hostPath: { path: '/var/run/docker.sock' } },
      { name: 'cache', persistentVolumeClaim: { claimName: 'cache', readOnly: false } },
      { name: 'conf', configMap: { name: 'conf', items: [{ key: 'a.txt', path: 'renamed.txt' }] } },
      { name: 'keys', secret: { secretName: 'keys' } },
      { name: 'scratch', emptyDir: { medium: 'Memory', sizeLimit: '1Gi' } },
    ]);
    expect(build!.volumeMounts).toContainEqual({ name: 'docker', mountPath: '/var/run/docker.sock', readOnly: true });
    expect(build!.volumeMounts).toContainEqual({ name: 'ci-runner-builds', mountPath: '/builds' });
  });

  it('keeps only the service names Kubernetes accepts as host names', () => {
    expect(serviceHostnames(['registry.example.com__group__redis', 'registry.example.com-group-redis', 'db', 'Bad_Alias'])).toEqual({ valid: ['registry.example.com-group-redis', 'db'], refused: ['registry.example.com__group__redis', 'Bad_Alias'] });
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
    expect(judgePod(waiting('ImagePullBackOff'))).toEqual({ kind: 'pull-failed', reason: 'build container: ImagePullBackOff: the kubelet says why' });
    expect(judgePod(waiting('ContainerCreating'))).toEqual({ kind: 'waiting', reason: 'build: ContainerCreating: the kubelet says why' });
  });

  it('says why a pod is not scheduled', () => {
    const unscheduled = pod({ phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: '0/3 nodes are available: 3 Insufficient cpu.' }] });
    expect(judgePod(unscheduled)).toEqual({ kind: 'waiting', reason: 'Unschedulable: 0/3 nodes are available: 3 Insufficient cpu.' });
  });
});
