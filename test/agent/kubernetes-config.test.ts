import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/agent/config/index.js';
import { configFailure, configHead, firstRunner } from './config-text.js';
import { kubernetesSchema } from '../../src/agent/config/kubernetes-schema.js';
import { connect } from '../../src/executors/kubernetes/connection.js';

const HEAD = configHead('kubernetes', 'pods');

function runner(text: string) {
  const { runner: entry, warnings } = firstRunner(text);
  return { kubernetes: entry.kubernetes, warnings };
}

const failure = configFailure;

describe('[runners.kubernetes]', () => {
  it('gives a kubernetes runner without the table GitLab Runner defaults', () => {
    expect(runner(HEAD).kubernetes).toEqual({
      namespace: 'default', pull_policy: [], image_pull_secrets: [], allowed_images: [], allowed_services: [], services: [],
      node_selector: {}, node_tolerations: {}, pod_labels: {}, pod_annotations: {}, privileged: false, poll_interval: 3, poll_timeout: 180,
      volumes: { host_path: [], pvc: [], config_map: [], secret: [], empty_dir: [] }, host_aliases: [],
    });
  });

  it('reads GitLab Runner\'s keys and forms: a pull_policy string, service strings, tables of volumes, 0 meaning the default', () => {
    const { kubernetes } = runner(`${HEAD}  [runners.kubernetes]
    namespace = "ci"
    image = "alpine:3"
    pull_policy = "if-not-present"
    poll_timeout = 0
    cpu_limit = 1.5
    memory_request = "256Mi"
    services = ["redis:7", { name = "postgres:16", alias = "db" }]
    [runners.kubernetes.node_tolerations]
      "dedicated=ci" = "NoSchedule"
    [[runners.kubernetes.volumes.host_path]]
      name = "docker"
      mount_path = "/var/run/docker.sock"
      read_only = true
`);
    expect(kubernetes).toMatchObject({
      namespace: 'ci', image: 'alpine:3', pull_policy: ['if-not-present'], poll_timeout: 180, cpu_limit: '1.5', memory_request: '256Mi',
      services: [{ name: 'redis:7' }, { name: 'postgres:16', alias: 'db' }],
      node_tolerations: { 'dedicated=ci': 'NoSchedule' },
      volumes: { host_path: [{ name: 'docker', mount_path: '/var/run/docker.sock', read_only: true }] },
    });
  });

  it('names a misspelt key with its line and a suggestion, and warns about GitLab keys it does not use', () => {
    expect(failure(`${HEAD}  [runners.kubernetes]\n    namepsace = "ci"\n`)).toContain('c.toml:9: unknown key `namepsace` in [runners.kubernetes] (did you mean `namespace`?)');
    const { warnings } = runner(`${HEAD}  [runners.kubernetes]\n    helper_image = "gitlab/helper:x"\n    cleanup_grace_period_seconds = 0\n`);
    expect(warnings).toEqual(['c.toml:9: `helper_image` in [runners.kubernetes] is ignored: ci-runner\'s kubernetes executor has no helper container: get_sources, artifacts and cache run on the runner']);
  });

  it('refuses a bad value with its line and what is expected', () => {
    expect(failure(`${HEAD}  [runners.kubernetes]\n    memory_limit = "lots"\n`)).toContain('c.toml:9: `runners.kubernetes.memory_limit`: a Kubernetes quantity such as "500m", "1.5", "512Mi" or "2Gi"');
    expect(failure(`${HEAD}  [runners.kubernetes]\n    pull_policy = "sometimes"\n`)).toContain('`runners.kubernetes.pull_policy`');
    expect(failure(`${HEAD}  [[runners.kubernetes.volumes.empty_dir]]\n    name = "Scratch"\n    mount_path = "/s"\n`)).toContain('`runners.kubernetes.volumes.empty_dir.name`: a DNS-1123 label');
  });
});

describe('the cluster connection', () => {
  it('says what to set when nothing says which cluster', () => {
    expect(() => connect({}, { HOME: '/nonexistent' })).toThrow(/no cluster configured: set \[runners\.kubernetes\] host/);
  });

  it('refuses a missing file and half a client certificate', () => {
    expect(() => connect({ host: 'https://k8s:6443', ca_file: '/nonexistent/ca.crt' })).toThrow('[runners.kubernetes] ca_file "/nonexistent/ca.crt" does not exist');
    expect(() => connect({ host: 'https://k8s:6443', cert_file: '/etc/hostname' })).toThrow('cert_file and key_file go together');
  });

  it('uses host and bearer_token over KUBECONFIG', () => {
    const connection = connect({ host: 'https://k8s.example.com:6443/', bearer_token: 'tok' }, { KUBECONFIG: '/nonexistent' });
    expect(connection.server).toBe('https://k8s.example.com:6443');
    expect(connection.config.getCurrentUser()?.token).toBe('tok');
  });
});

describe('config.example.toml', () => {
  it('documents every [runners.kubernetes] key', async () => {
    const text = (await readFile(new URL('../../config.example.toml', import.meta.url), 'utf8')).replace(/^(\s*)# (host|bearer_token|ca_file|cert_file|key_file) = /gm, '$1$2 = ');
    const { config, warnings } = parseConfig(text, 'config.example.toml');
    expect(warnings).toEqual([]);
    const kubernetes = config.runners.find((r) => r.executor === 'kubernetes')!.kubernetes;
    expect(new Set(Object.keys(kubernetes))).toEqual(new Set(Object.keys(kubernetesSchema.shape)));
    expect(Object.values(kubernetes.volumes).every((list) => list.length > 0)).toBe(true);
  });
});
