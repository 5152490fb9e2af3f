/**
 * `register --executor kubernetes` with GitLab Runner 19's `--kubernetes-*` flags and environment names
 * (the Helm chart's own included: `--kubernetes-node-selector "key":"value"`, `--kubernetes-pod-labels`,
 * `--kubernetes-pod-security-context-supplemental-groups`), written as a [runners.kubernetes] table the
 * loader reads back; a value the loader would refuse is refused before anything is registered.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/agent/config/index.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { cli } from './cli.js';
import { workDirs } from './helpers.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t.close();
});

describe('register --executor kubernetes', () => {
  it('writes the --kubernetes-* flags and their environment names into [runners.kubernetes], which the loader reads back', async () => {
    const { root } = await workDirs();
    const config = join(root, 'config.toml');
    const reg = await cli(
      [
        'register', '-c', config, '--non-interactive', '--url', t.url, '-r', t.server.registrationToken, '--name', 'pods', '--executor', 'kubernetes',
        '--kubernetes-namespace', 'ci', '--kubernetes-image', 'alpine:3.20', '--kubernetes-image-pull-secrets', 'regcred',
        '--kubernetes-node-selector', 'kubernetes.io/arch:amd64', '--kubernetes-node-tolerations', 'dedicated=ci:NoSchedule',
        '--kubernetes-pod-labels', 'team:platform', '--kubernetes-pod-annotations', 'note:see https://example.com',
        '--kubernetes-pod-security-context-supplemental-groups', '1000', '--kubernetes-pod-security-context-run-as-user', '1000',
        '--kubernetes-build_container_security_context-capabilities-drop', 'ALL', '--kubernetes-privileged=false',
        '--kubernetes-cpu-limit', '2', '--kubernetes-cpu-limit-overwrite-max-allowed', '4', '--kubernetes-pull-policy', 'if-not-present',
        '--kubernetes-host_aliases', '[{"ip": "10.0.0.7", "hostnames": ["a.internal"]}]', '--kubernetes-retry-limits', 'connection refused:9',
      ],
      { env: { KUBERNETES_MEMORY_REQUEST: '1Gi', KUBERNETES_ALLOWED_IMAGES: 'alpine:*, debian:*', KUBERNETES_POLL_TIMEOUT: '600', KUBERNETES_SERVICE_ACCOUNT: 'ci-jobs' } },
    );
    expect(reg.exitCode, reg.all).toBe(0);
    expect(reg.stderr).not.toContain('WARNING');
    const text = await readFile(config, 'utf8');
    expect(text).toContain('executor = "kubernetes"');
    expect(text).toContain('  [runners.kubernetes]\n');
    expect(text).toContain('[[runners.kubernetes.host_aliases]]');
    const { config: parsed, warnings } = parseConfig(text, config);
    expect(warnings).toEqual([]);
    expect(parsed.runners[0]!.kubernetes).toMatchObject({
      namespace: 'ci', image: 'alpine:3.20', image_pull_secrets: ['regcred'], allowed_images: ['alpine:*', 'debian:*'],
      node_selector: { 'kubernetes.io/arch': 'amd64' }, node_tolerations: { 'dedicated=ci': 'NoSchedule' },
      pod_labels: { team: 'platform' }, pod_annotations: { note: 'see https://example.com' },
      pod_security_context: { supplemental_groups: [1000], run_as_user: 1000 },
      build_container_security_context: { capabilities: { drop: ['ALL'] } }, privileged: false,
      cpu_limit: '2', cpu_limit_overwrite_max_allowed: '4', memory_request: '1Gi', pull_policy: ['if-not-present'], poll_timeout: 600,
      service_account: 'ci-jobs', host_aliases: [{ ip: '10.0.0.7', hostnames: ['a.internal'] }], retry_limits: { 'connection refused': 9 },
    });
  });

  it('refuses a value the loader would refuse, naming the flag, before asking the coordinator (exit 2)', async () => {
    const { root } = await workDirs();
    const config = join(root, 'config.toml');
    const bad = await cli(['register', '-c', config, '-n', '--url', 'http://127.0.0.1:9/', '-r', 'x', '--executor', 'kubernetes', '--kubernetes-memory-limit', 'lots']);
    expect(bad.exitCode, bad.all).toBe(2);
    expect(bad.stderr).toContain('--kubernetes-memory-limit: a Kubernetes quantity');
    const pair = await cli(['register', '-c', config, '-n', '--url', 'http://127.0.0.1:9/', '-r', 'x', '--executor', 'kubernetes', '--kubernetes-node-selector', 'novalue']);
    expect(pair.exitCode, pair.all).toBe(2);
    expect(pair.stderr).toContain('--kubernetes-node-selector: "novalue" is not key:value');
  });
});
