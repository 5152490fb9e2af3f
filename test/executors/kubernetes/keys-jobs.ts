/** Running a job on a kubernetes runner that talks to the cluster through a recording proxy (keys-*.test.ts). */
import type { TestServer } from '../../helpers/server.js';
import { waitUntil } from '../../cli/helpers.js';
import { cluster, labelled } from './cluster.js';
import { runKubernetesJob } from './jobs.js';
import type { RecordingProxy } from './recording-proxy.js';

export interface ProxiedJob {
  t: TestServer;
  token: string;
  namespace: string;
  proxy: RecordingProxy;
}

/**
 * Runs `script` with the job's own `variables` (as .gitlab-ci.yml gives them: not masked) and more of
 * the job's YAML (`jobYaml`, indented lines) on a runner with `kubernetes`; returns the job and its first
 * pod as sent and as created.
 */
export async function runProxied(at: ProxiedJob, script: string[], kubernetes: Record<string, unknown>, variables: Record<string, string> = {}, jobYaml = '') {
  const vars = Object.entries(variables).map(([key, value]) => `    ${key}: ${JSON.stringify(value)}\n`).join('');
  const yaml = `j:\n${jobYaml}${vars ? `  variables:\n${vars}` : ''}  script:\n${script.map((line) => `    - ${JSON.stringify(line)}`).join('\n')}\n`;
  const job = await runKubernetesJob(at.t, at.token, yaml, { namespace: at.namespace, kubernetes: { host: at.proxy.url, ...kubernetes } });
  const pods = at.proxy.pods.filter((p) => p.sent.metadata?.labels?.['ci-runner/job'] === String(job.id));
  return { ...job, pod: pods[0], pods };
}

/** Nothing of the job's is left in `namespace`: no undeleted pod, no secret. */
export async function nothingLeft(namespace: string, token: string, id: number): Promise<void> {
  await waitUntil(async () => {
    const left = await labelled(cluster!.core, namespace, token, id);
    return left.undeleted.length === 0 && left.secrets.length === 0;
  }, 60_000, 'the job\'s pods and secrets deleted');
}
