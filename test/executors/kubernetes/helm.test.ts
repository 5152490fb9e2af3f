/**
 * The config.toml of a GitLab Runner deployed with the gitlab-runner Helm chart, as its register step
 * leaves it (test/fixtures/helm-kubernetes-config.toml): it loads with no warning about
 * [runners.kubernetes], and its entry runs a job on the kit's cluster, finding the cluster as the chart's
 * runner does (no `host`: the kubeconfig, here the kit's; in the chart, the pod's service account).
 */
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/agent/config/index.js';
import { defaultServices } from '../../../src/agent/services.js';
import { silentLogger } from '../../../src/log/index.js';
import { workDirs } from '../../cli/helpers.js';
import { runOnce } from '../../helpers/run-once.js';
import type { TestServer } from '../../helpers/server.js';
import { cluster, K8S_IMAGES, skipKubernetes } from './cluster.js';
import { useKubernetesTestServer, useNamespace } from './jobs.js';

let t: TestServer;
let token: string;
useKubernetesTestServer((server, runnerToken) => {
  t = server;
  token = runnerToken;
});

const namespace = await useNamespace('ci-runner-test-helm');

describe.skipIf(skipKubernetes)('a Helm-deployed GitLab Runner\'s config.toml', () => {
  it('loads without a word about [runners.kubernetes] and runs a job in the release\'s namespace', async () => {
    const fixture = await readFile(new URL('../../fixtures/helm-kubernetes-config.toml', import.meta.url), 'utf8');
    const text = fixture.replace('@URL@', t.url).replace('@TOKEN@', token).replace('@NAMESPACE@', namespace).replace('@IMAGE@', K8S_IMAGES.sh);
    const { config, warnings } = parseConfig(text, 'config.toml');
    expect(warnings.filter((w) => w.includes('kubernetes'))).toEqual([]);
    const entry = config.runners[0]!;
    expect(entry.kubernetes).toMatchObject({ namespace, image: K8S_IMAGES.sh, pull_policy: [], poll_timeout: 180 });
    expect(entry.kubernetes.host).toBeUndefined();

    process.env.KUBECONFIG = cluster!.kubeconfig;
    const dirs = await workDirs();
    const p = await t.pipeline('j:\n  script:\n    - echo "hello from $CI_PROJECT_DIR"\n    - id -u\n');
    const never = new AbortController().signal;
    const result = await runOnce({ runner: { ...entry, builds_dir: dirs.builds, cache_dir: dirs.cache }, services: defaultServices(silentLogger()), waitTimeoutMs: 20_000, pollIntervalMs: 200, stopWaiting: never, stopJob: never });
    const id = p.jobs[0]!.id;
    const trace = (await t.server.getTrace(id)).toString('utf8');
    expect(result.kind).toBe('job');
    expect(t.server.getJob(id)?.status, trace).toBe('success');
    expect(trace).toContain(`Using Kubernetes namespace: ${namespace}`);
    expect(trace).toContain('hello from /builds/group/project');
  });
});
