/**
 * What the kubernetes tests need from the machine: the single-node Kubernetes kit brought up (its
 * `up.sh` is idempotent: 0.3 s when the cluster is up) and the test images loaded into it (there is no
 * registry; .ci/docker-test-images.sh builds them in docker, `load-image.sh` copies them over). The
 * kit is the directory K8S_KIT names (.ci/run sets it). Where it cannot run (no kit, not root) the
 * tests skip saying why, except under CI=true, where that is a failure.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { runnerHash } from '../../../src/executors/kubernetes/labels.js';

const run = promisify(execFile);
const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const KIT = process.env.K8S_KIT;

export interface Cluster {
  kubeconfig: string;
  api: string;
  caFile: string;
  token: string;
  kubectl: string;
  core: CoreV1Api;
}

/** The images the kubernetes tests run (made by .ci/docker-test-images.sh, as for the docker tests). */
export const K8S_IMAGES = {
  sh: 'ci-runner-test/sh:1',
  bash: 'ci-runner-test/bash:1',
  /** A service: busybox httpd on port 80. */
  httpd: 'ci-runner-test/httpd:1',
  /** ENTRYPOINT a wrapper ending in `exec "$@"`. */
  entry: 'ci-runner-test/entry:1',
  /** `USER 1000:1000`. */
  user: 'ci-runner-test/user:1',
  /** `USER 1000`, ENTRYPOINT `/bin/echo` (never runs the shell it is given). */
  binentry: 'ci-runner-test/binentry:1',
} as const;

/** A cluster, or why there is none. */
async function bringUp(): Promise<Cluster | string> {
  if (!KIT) return 'K8S_KIT does not name the Kubernetes kit (.ci/run sets it)';
  if (!existsSync(join(KIT, 'up.sh'))) return `the Kubernetes kit is not at K8S_KIT=${KIT}`;
  if (process.getuid?.() !== 0) return 'the Kubernetes kit needs root';
  let line: string;
  try {
    // The first bring-up on a machine builds Kubernetes (~10 min).
    line = (await run('bash', [join(KIT, 'up.sh')], { timeout: 40 * 60_000, maxBuffer: 16 * 1024 * 1024 })).stdout.trim().split('\n').pop() ?? '';
  } catch (error) {
    return `the Kubernetes kit did not come up: ${(error as Error).message.split('\n').slice(-3).join(' ')}`;
  }
  const env = Object.fromEntries(line.split(/\s+/).map((pair) => pair.split('=', 2) as [string, string]));
  const { KUBECONFIG: kubeconfig, K8S_API: api, K8S_CA: caFile, K8S_TOKEN_FILE: tokenFile, K8S_KUBECTL: kubectl } = env;
  if (!kubeconfig || !api || !caFile || !tokenFile || !kubectl) return `the kit's up.sh printed no usable line: ${line}`;
  const config = new KubeConfig();
  config.loadFromFile(kubeconfig);
  const core = config.makeApiClient(CoreV1Api);
  const images = await run(join(repo, '.ci/docker-test-images.sh'), [], { timeout: 300_000 }).then(
    () => undefined,
    (error: unknown) => `the test images could not be built: ${(error as Error).message}`,
  );
  if (images) return images;
  await loadMissing(core, Object.values(K8S_IMAGES));
  return { kubeconfig, api, caFile, token: readFileSync(tokenFile, 'utf8').trim(), kubectl, core };
}

/** Loads the images the node does not list yet (the kubelet reports what its containerd holds). */
export async function loadMissing(core: CoreV1Api, images: readonly string[]): Promise<void> {
  const nodes = await core.listNode();
  const present = new Set(nodes.items.flatMap((n) => n.status?.images ?? []).flatMap((i) => i.names ?? []));
  const missing = images.filter((image) => !present.has(`docker.io/${image}`) && !present.has(image));
  if (missing.length > 0 && KIT) await run('bash', [join(KIT, 'load-image.sh'), ...missing], { timeout: 600_000, maxBuffer: 16 * 1024 * 1024 });
}

const result = await bringUp();
if (typeof result === 'string') {
  if (process.env.CI === 'true') throw new Error(`kubernetes tests cannot run under CI: ${result}`);
  console.log(`kubernetes tests skipped: ${result}`);
}
/** Set when the kubernetes tests must skip. */
export const skipKubernetes = typeof result === 'string' ? result : undefined;
export const cluster = typeof result === 'string' ? undefined : result;

/** Names of the pods and secrets (any state) of one runner entry in `namespace`; `undeleted`: its pods nobody has deleted. */
export async function labelled(core: CoreV1Api, namespace: string, runnerToken: string, jobId?: number): Promise<{ pods: string[]; undeleted: string[]; secrets: string[] }> {
  const labelSelector = `ci-runner/runner=${runnerHash(runnerToken)}${jobId === undefined ? '' : `,ci-runner/job=${jobId}`}`;
  const pods = await core.listNamespacedPod({ namespace, labelSelector });
  const secrets = await core.listNamespacedSecret({ namespace, labelSelector });
  const undeleted = pods.items.filter((p) => !p.metadata?.deletionTimestamp);
  return { pods: pods.items.map((p) => p.metadata?.name ?? ''), undeleted: undeleted.map((p) => p.metadata?.name ?? ''), secrets: secrets.items.map((s) => s.metadata?.name ?? '') };
}
