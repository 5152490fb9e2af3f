/** Runs kubernetes jobs of the reference server in-process (run-once), for the kubernetes tests. */
import { logText } from '../../helpers/log-text.js';
import { runnerSchema } from '../../../src/agent/config/schema.js';
import { runOnce } from '../../helpers/run-once.js';
import { defaultServices, type SharedServices } from '../../../src/agent/services.js';
import { silentLogger } from '../../../src/log/index.js';
import { waitUntil, workDirs } from '../../cli/helpers.js';
import type { PipelineView } from '../../../src/server/index.js';
import { useTestServer, type TestServer } from '../../helpers/server.js';
import { cluster, K8S_IMAGES, skipKubernetes } from './cluster.js';

/**
 * Each test file its own namespace, so files running at once never see each other's pods. Returns
 * once the namespace's `default` service account has its token (Kubernetes 1.20 refuses pods until
 * then), so tests that create pods directly do not meet that race.
 */
export async function useNamespace(name: string): Promise<string> {
  if (!cluster) return name;
  const core = cluster.core;
  await core.createNamespace({ body: { metadata: { name } } }).catch((error: unknown) => {
    if ((error as { code?: number }).code !== 409) throw error;
  });
  await waitUntil(async () => {
    const account = await core.readNamespacedServiceAccount({ name: 'default', namespace: name }).catch(() => undefined);
    return (account?.secrets?.length ?? 0) > 0;
  }, 60_000, `namespace ${name}: the default service account's token`);
  return name;
}

export interface KubernetesJobOptions {
  namespace: string;
  kubernetes?: Record<string, unknown>;
  runner?: Record<string, unknown>;
  variables?: Record<string, string>;
  dirs?: { builds: string; cache: string };
  stopJob?: AbortSignal;
  services?: Partial<SharedServices>;
}

/** The runner's `[runners.kubernetes]` connection keys for the kit: host, token and CA (not KUBECONFIG). */
export function connectionKeys(): Record<string, string> {
  if (!cluster) return {};
  return { host: cluster.api, bearer_token: cluster.token, ca_file: cluster.caFile };
}

/** A pipeline to queue, or a later job of one already queued. */
export type JobSource = string | { pipeline: PipelineView; job: number };

/** Queues `yaml` and starts its first job (or runs the next job of a pipeline) on a kubernetes runner; `done` resolves with status and trace. */
export async function startKubernetesJob(server: TestServer, token: string, source: JobSource, options: KubernetesJobOptions) {
  const dirs = options.dirs ?? (await workDirs());
  const p = typeof source === 'string' ? await server.pipeline(source, options.variables) : source.pipeline;
  const config = runnerSchema.parse({
    name: 'k8s-test', url: server.url, token, executor: 'kubernetes', builds_dir: dirs.builds, cache_dir: dirs.cache, trace_update_interval: 0.2, kill_grace_period: 2,
    kubernetes: { ...connectionKeys(), namespace: options.namespace, image: K8S_IMAGES.sh, pull_policy: 'if-not-present', poll_interval: 1, poll_timeout: 60, ...options.kubernetes },
    ...options.runner,
  });
  const never = new AbortController().signal;
  const id = p.jobs[typeof source === 'string' ? 0 : source.job]!.id;
  const done = runOnce({ runner: config, services: { ...defaultServices(silentLogger()), ...options.services }, waitTimeoutMs: 20_000, pollIntervalMs: 200, stopWaiting: never, stopJob: options.stopJob ?? never }).then(
    async (result) => ({ result, status: server.server.getJob(id)?.status, trace: logText(await server.server.getTrace(id)) }),
  );
  return { id, dirs, config, pipeline: p, done };
}

/** Queues `yaml`, runs its first job on a kubernetes runner, returns status and trace. */
export async function runKubernetesJob(server: TestServer, token: string, source: JobSource, options: KubernetesJobOptions) {
  const job = await startKubernetesJob(server, token, source, options);
  return { ...job, ...(await job.done) };
}

/** A reference server and a registered runner for a kubernetes test file (not started when the tests skip). */
export function useKubernetesTestServer(use: (server: TestServer, runnerToken: string) => void, files: Record<string, string> = { 'README.md': '# p\n' }): void {
  useTestServer(use, { skip: Boolean(skipKubernetes), files });
}
