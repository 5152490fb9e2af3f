/**
 * `ci-runner run-once --executor kubernetes` as a new user runs it, with GitLab Runner's
 * `--kubernetes-*` flags and environment names: one job as a pod on the kit's cluster, then exit 0; a
 * cluster that refuses the account is exit 2 before any job is taken.
 */
import { describe, expect, it } from 'vitest';
import { cli } from '../../cli/cli.js';
import { workDirs } from '../../cli/helpers.js';
import type { TestServer } from '../../helpers/server.js';
import { cluster, K8S_IMAGES, skipKubernetes } from './cluster.js';
import { useKubernetesTestServer, useNamespace } from './jobs.js';

let t: TestServer;
let token: string;
useKubernetesTestServer((server, runnerToken) => {
  t = server;
  token = runnerToken;
});

const namespace = await useNamespace('ci-runner-test-cli');

describe.skipIf(skipKubernetes)('run-once --executor kubernetes', () => {
  it('runs a job as a pod with the --kubernetes-* flags and KUBERNETES_* environment, and exits 0', async () => {
    const d = await workDirs();
    const p = await t.pipeline('j:\n  script:\n    - echo "in the pod as $(id -u)"\n');
    const result = await cli(
      [
        'run-once', '--url', t.url, '--token', token, '--builds-dir', d.builds, '--cache-dir', d.cache, '--executor', 'kubernetes',
        '--kubernetes-host', cluster!.api, '--kubernetes-ca-file', cluster!.caFile, '--kubernetes-namespace', namespace,
        '--kubernetes-pull-policy', 'if-not-present', '--kubernetes-pod-labels', 'team:cli', '--kubernetes-pod-security-context-run-as-user', '1000',
        '--wait-timeout', '30s',
      ],
      { env: { KUBERNETES_BEARER_TOKEN: cluster!.token, KUBERNETES_IMAGE: K8S_IMAGES.sh, KUBERNETES_POLL_TIMEOUT: '120' } },
    );
    const trace = (await t.server.getTrace(p.jobs[0]!.id)).toString('utf8');
    expect(result.exitCode, `${result.all}\n${trace}`).toBe(0);
    expect(trace).toContain(`Using Kubernetes namespace: ${namespace}`);
    expect(trace).toContain('in the pod as 1000');
  });

  it('refuses at once (exit 2) when the cluster does not take the account', async () => {
    const d = await workDirs();
    const result = await cli(['run-once', '--url', t.url, '--token', token, '--builds-dir', d.builds, '--executor', 'kubernetes', '--kubernetes-host', cluster!.api, '--kubernetes-ca-file', cluster!.caFile, '--kubernetes-bearer_token', 'not-a-token', '--kubernetes-namespace', namespace, '--wait-timeout', '5s']);
    expect(result.exitCode, result.all).toBe(2);
    expect(result.stderr).toContain('cannot run kubernetes jobs:');
  });
});
