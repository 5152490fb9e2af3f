/**
 * The runner deployed on the cluster as packaging/kubernetes/ describes it: the project's image (built
 * from the Dockerfile), its ServiceAccount and least Role, config.toml from a Secret, two replicas of
 * `ci-runner run` polling one coordinator, each running jobs as pods of its own through the pod's
 * service account. Two changes for the kit, made here and nowhere in packaging/: the kit's pods have
 * no route to the host or to the API's service address, so the runner pods use the host's network
 * (hostNetwork) and reach the API at 127.0.0.1:6443; and the image is loaded, not pulled.
 */
import { logText } from '../../helpers/log-text.js';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { parseAllDocuments, stringify } from 'yaml';
import type { V1Deployment, V1Secret } from '@kubernetes/client-node';
import { waitUntil } from '../../cli/helpers.js';
import type { TestServer } from '../../helpers/server.js';
import { REPO, testImage } from '../../image/image.js';
import { cluster, K8S_IMAGES, labelled, loadMissing, skipKubernetes } from './cluster.js';
import { useKubernetesTestServer } from './jobs.js';

const run = promisify(execFile);
const NAMESPACE = 'ci-runner';

let t: TestServer;
let token: string;
useKubernetesTestServer((server, runnerToken) => {
  t = server;
  token = runnerToken;
});

async function kubectl(args: string[], input?: string): Promise<string> {
  const child = execFile(cluster!.kubectl, ['--kubeconfig', cluster!.kubeconfig, ...args], { maxBuffer: 16 * 1024 * 1024, timeout: 120_000 });
  const done = new Promise<string>((resolve, reject) => {
    let out = '';
    let err = '';
    child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`kubectl ${args.join(' ')}: ${err || out}`))));
  });
  child.stdin?.end(input ?? '');
  return done;
}

/** packaging/kubernetes/ as kustomization.yaml lists it, with the kit's two changes and this test's config.toml. */
async function manifests(image: string): Promise<string> {
  const dir = join(REPO, 'packaging/kubernetes');
  const kustomization = parseAllDocuments(await readFile(join(dir, 'kustomization.yaml'), 'utf8'))[0]!.toJS() as { resources: string[] };
  const docs: Array<{ kind?: string }> = [];
  for (const file of kustomization.resources) for (const doc of parseAllDocuments(await readFile(join(dir, file), 'utf8'))) docs.push(doc.toJS() as { kind?: string });
  const config = [
    // One job at a time per replica: two jobs at once must go to both.
    'concurrent = 1',
    '[[runners]]',
    '  name = "in-cluster"',
    `  url = "${t.url}"`,
    `  token = "${token}"`,
    '  executor = "kubernetes"',
    '  builds_dir = "/builds"',
    '  cache_dir = "/cache"',
    '  [runners.kubernetes]',
    `    namespace = "${NAMESPACE}"`,
    `    image = "${K8S_IMAGES.sh}"`,
    '    pull_policy = "if-not-present"',
    '    poll_interval = 1',
    '',
  ].join('\n');
  for (const doc of docs) {
    if (doc.kind === 'Secret') (doc as V1Secret).stringData = { 'config.toml': config };
    if (doc.kind !== 'Deployment') continue;
    const spec = (doc as V1Deployment).spec!.template.spec!;
    spec.hostNetwork = true;
    const container = spec.containers[0]!;
    container.image = image;
    container.imagePullPolicy = 'Never';
    (container.env ??= []).push({ name: 'KUBERNETES_SERVICE_HOST', value: '127.0.0.1' }, { name: 'KUBERNETES_SERVICE_PORT', value: '6443' });
    // Two replicas on one host network cannot both listen on the metrics port the probes use.
    delete container.ports;
    delete container.livenessProbe;
    delete container.readinessProbe;
  }
  return docs.map((d) => stringify(d)).join('---\n');
}

afterAll(async () => {
  if (!cluster) return;
  await kubectl(['delete', 'namespace', NAMESPACE, '--wait=false', '--ignore-not-found']).catch(() => undefined);
});

describe.skipIf(skipKubernetes)('the runner deployed on Kubernetes', () => {
  it('runs jobs from inside the cluster: two replicas of the project\'s image with the packaged Role, jobs as pods', async () => {
    // An earlier run's namespace may still be going away.
    await waitUntil(() => cluster!.core.readNamespace({ name: NAMESPACE }).then((ns) => !ns.metadata?.deletionTimestamp, () => true), 120_000, `namespace ${NAMESPACE} gone`);
    const image = await testImage();
    await loadMissing(cluster!.core, [image.tag]);
    await kubectl(['apply', '-f', '-'], await manifests(image.tag));
    await kubectl(['-n', NAMESPACE, 'rollout', 'status', 'deployment/ci-runner', '--timeout=180s']);

    const pipeline = await t.pipeline('a:\n  script:\n    - echo "job a in $(hostname)"\n    - sleep 3\nb:\n  script:\n    - echo "job b in $(hostname)"\n    - sleep 3\n');
    for (const job of pipeline.jobs) await t.waitForJob(job.id, (j) => ['success', 'failed', 'canceled'].includes(j.status), 180_000);
    for (const job of pipeline.jobs) {
      const trace = logText(await t.server.getTrace(job.id));
      expect(t.server.getJob(job.id)?.status, trace).toBe('success');
      expect(trace).toContain(`Using Kubernetes namespace: ${NAMESPACE}`);
      expect(trace).toMatch(new RegExp(`job ${job.name} in runner-[0-9a-z]+-project-\\d+-concurrent-\\d+-[a-z0-9]{8}`));
    }
    // Both replicas took one: each its own job pods, labelled with its own pod name (POD_NAME).
    const replicas = (await kubectl(['-n', NAMESPACE, 'get', 'pods', '-l', 'app.kubernetes.io/name=ci-runner', '-o', 'name'])).trim().split('\n');
    expect(replicas).toHaveLength(2);
    for (const replica of replicas) expect(await kubectl(['-n', NAMESPACE, 'logs', replica])).toContain('Checking for jobs... received');

    await kubectl(['-n', NAMESPACE, 'delete', 'deployment', 'ci-runner', '--wait=true', '--timeout=120s']);
    // The replicas deleted their job pods and secrets; how soon a busy kubelet ends a deleted pod is not theirs.
    await waitUntil(async () => {
      const left = await labelled(cluster!.core, NAMESPACE, token);
      return left.undeleted.length === 0 && left.secrets.length === 0;
    }, 60_000, 'the job pods deleted');
  }, 40 * 60_000);
});
