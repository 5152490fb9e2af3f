/**
 * Kubernetes executor benchmark on the kit's single-node cluster: per-job time of a trivial
 * job in a small image (pickup → final state accepted), p50/p95 over 20 jobs, next to the floor
 * measured in the same run (a pod running `true`, created → Succeeded as the API reports it, median of
 * 10 before and 10 after); with git (fetched on the runner, streamed into the pod) and without
 * (GIT_STRATEGY none); the wall of 20 trivial jobs at concurrent = 4; and a 50 MB checkout streamed in.
 * Needs K8S_KIT (the kit's directory; its up.sh is idempotent) and the test images.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { CoreV1Api, KubeConfig, Watch, type V1Pod } from '@kubernetes/client-node';
import { Agent } from '../src/agent/agent.js';
import { configSchema } from '../src/agent/config/schema.js';
import { defaultServices } from '../src/agent/services.js';
import { silentLogger } from '../src/log/index.js';
import { createReferenceServer, type ReferenceServer } from '../src/server/index.js';
import { createGitRepo } from '../test/helpers/git.js';
import { percentile, pickupTimer, register, runToEnd } from './support.js';

const IMAGE = 'ci-runner-test/sh:1';
const NAMESPACE = 'ci-runner-bench';
const IMAGES_SCRIPT = fileURLToPath(new URL('../.ci/docker-test-images.sh', import.meta.url));

interface Kit {
  kubeconfig: string;
  api: string;
  caFile: string;
  tokenFile: string;
}

async function bringUp(): Promise<Kit> {
  const kit = process.env.K8S_KIT;
  if (!kit) throw new Error('K8S_KIT does not name the Kubernetes kit');
  const line = (await execa('bash', [join(kit, 'up.sh')], { timeout: 40 * 60_000 })).stdout.trim().split('\n').pop() ?? '';
  const env = Object.fromEntries(line.split(/\s+/).map((pair) => pair.split('=', 2) as [string, string]));
  await execa(IMAGES_SCRIPT);
  await execa('bash', [join(kit, 'load-image.sh'), IMAGE]);
  return { kubeconfig: env.KUBECONFIG ?? '', api: env.K8S_API ?? '', caFile: env.K8S_CA ?? '', tokenFile: env.K8S_TOKEN_FILE ?? '' };
}

/** Creates a pod running `true` and resolves with the ms until the API reports it Succeeded. */
async function floorOnce(config: KubeConfig, core: CoreV1Api): Promise<number> {
  const name = `bench-floor-${randomBytes(3).toString('hex')}`;
  const t0 = performance.now();
  let stop: AbortController | undefined;
  const succeeded = new Promise<number>((resolve, reject) => {
    void new Watch(config)
      .watch(`/api/v1/namespaces/${NAMESPACE}/pods`, { fieldSelector: `metadata.name=${name}` }, (_type, pod: V1Pod) => {
        if (pod.status?.phase === 'Succeeded') resolve(performance.now() - t0);
        if (pod.status?.phase === 'Failed') reject(new Error(`floor pod ${name} failed`));
      }, () => undefined)
      .then((controller) => (stop = controller));
  });
  await core.createNamespacedPod({ namespace: NAMESPACE, body: { metadata: { name }, spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: IMAGE, imagePullPolicy: 'Never', command: ['true'] }] } } });
  const ms = await succeeded;
  stop?.abort();
  await core.deleteNamespacedPod({ name, namespace: NAMESPACE, gracePeriodSeconds: 0 });
  return ms;
}

/** Until the namespace has no pods: the kubelet tearing the last run's pods down would slow the next one. */
async function drained(core: CoreV1Api): Promise<void> {
  const deadline = Date.now() + 180_000;
  while ((await core.listNamespacedPod({ namespace: NAMESPACE })).items.length > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 500));
}

async function floor(config: KubeConfig, core: CoreV1Api, runs: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < runs; i += 1) times.push(await floorOnce(config, core));
  return times;
}

async function runPipeline(server: ReferenceServer, kit: Kit, root: string, yaml: string, concurrent: number, label: string, project = 'bench/project') {
  const token = await register(server);
  const config = configSchema.parse({
    concurrent,
    check_interval: 3,
    runners: [{
      name: 'bench-k8s', url: server.url, token, executor: 'kubernetes',
      builds_dir: join(root, `builds-${label}`), cache_dir: join(root, 'cache'),
      kubernetes: { host: kit.api, bearer_token: (await readFile(kit.tokenFile, 'utf8')).trim(), ca_file: kit.caFile, namespace: NAMESPACE, image: IMAGE, pull_policy: 'if-not-present', poll_interval: 1 },
    }],
  });
  const perJob: number[] = [];
  const beyondPod: number[] = [];
  const reading: Array<Promise<void>> = [];
  const agent = new Agent(config, defaultServices(silentLogger()), pickupTimer((id, ms) => {
    perJob.push(ms);
    // The trace says how long the pod took to start: the rest is what the runner adds.
    reading.push(server.getTrace(id).then((trace) => {
      const started = /\(started in (\d+\.\d+) s\)/.exec(trace.toString('utf8'))?.[1];
      if (started) beyondPod.push(ms - Number(started) * 1000);
    }));
  }));
  const pipeline = await server.createPipeline({ project, config: yaml });
  const wall = await runToEnd(agent, () => server.getPipeline(pipeline.id)?.status);
  await Promise.all(reading);
  return { wall, perJob: perJob.sort((a, b) => a - b), beyondPod: beyondPod.sort((a, b) => a - b) };
}

const trivial = (n: number, vars = ''): string => vars + Array.from({ length: n }, (_, i) => `job${i}:\n  script:\n    - "true"\n`).join('');

export async function run(): Promise<void> {
  let kit: Kit;
  try {
    kit = await bringUp();
  } catch (error) {
    process.stdout.write(`skipped: no Kubernetes kit (${(error as Error).message.split('\n')[0]})\n`);
    return;
  }
  const config = new KubeConfig();
  config.loadFromFile(kit.kubeconfig);
  const core = config.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: NAMESPACE } } }).catch(() => undefined);
  const root = await mkdtemp(join(tmpdir(), 'ci-runner-bench-k8s-'));
  const repo = await createGitRepo({ 'README.md': '# bench\n' });
  const big: Record<string, string> = {};
  for (let i = 0; i < 50; i += 1) big[`tree/part-${i}.txt`] = randomBytes(786_432).toString('base64');
  const bigRepo = await createGitRepo(big);
  const server = await createReferenceServer({ projects: [{ name: 'bench/project', path: repo }, { name: 'bench/big', path: bigRepo }], logger: silentLogger() });
  const fmt = (ms: number): string => `${ms.toFixed(0)} ms`;
  try {
    await floor(config, core, 2); // warm the node: the image, the sandbox path
    const before = await floor(config, core, 10);
    await drained(core);
    const withGit = await runPipeline(server, kit, root, trivial(20), 1, 'git');
    await drained(core);
    const noGit = await runPipeline(server, kit, root, trivial(20, 'variables:\n  GIT_STRATEGY: none\n'), 1, 'nogit');
    await drained(core);
    const after = await floor(config, core, 10);
    const floorMs = percentile([...before, ...after].sort((a, b) => a - b), 50);
    process.stdout.write(`floor, a pod running \`true\` in ${IMAGE}, created → Succeeded: p50 ${fmt(floorMs)} (20 runs around the jobs)\n`);
    for (const [label, r] of [['with git fetch', withGit], ['GIT_STRATEGY none', noGit]] as const) {
      const p50 = percentile(r.perJob, 50);
      process.stdout.write(`per-job, 20 trivial jobs, concurrent=1, ${label}: p50 ${fmt(p50)}, p95 ${fmt(percentile(r.perJob, 95))}; p50 minus floor ${fmt(p50 - floorMs)}; each job minus its own pod's start: p50 ${fmt(percentile(r.beyondPod, 50))}\n`);
    }
    await drained(core);
    const four = await runPipeline(server, kit, root, trivial(20), 4, 'four');
    process.stdout.write(`20 trivial jobs, concurrent=4: wall ${(four.wall / 1000).toFixed(2)} s (per job p50 ${fmt(percentile(four.perJob, 50))})\n`);
    await drained(core);
    const big = await runPipeline(server, kit, root, trivial(3), 1, 'big', 'bench/big');
    process.stdout.write(`a trivial job on a 50 MB project (clone on the runner, checkout and .git streamed into the pod): p50 of 3 ${fmt(percentile(big.perJob, 50))}\n`);
  } finally {
    await server.close();
    await rm(root, { recursive: true, force: true });
    await rm(repo, { recursive: true, force: true });
    await rm(bigRepo, { recursive: true, force: true });
  }
}
