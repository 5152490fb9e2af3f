import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/agent/config/index.js';
import { configFailure, configHead, firstRunner } from './config-text.js';
import { KUBERNETES_KEYS, kubernetesSchema } from '../../src/agent/config/kubernetes-schema.js';
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
      namespace: 'default', bearer_token_overwrite_allowed: false, namespace_per_job: false, pull_policy: [], allowed_pull_policies: [],
      image_pull_secrets: [], use_service_account_image_pull_secrets: false, allowed_images: [], allowed_services: [], allowed_users: [], allowed_groups: [],
      services: [], node_selector: {}, node_tolerations: {}, affinity: {}, pod_labels: {}, pod_annotations: {}, cap_add: [], cap_drop: [],
      pod_security_context: { supplemental_groups: [] }, build_container_security_context: {}, service_container_security_context: {},
      dns_config: { nameservers: [], searches: [], options: [] }, host_aliases: [], container_lifecycle: {}, pod_spec: [],
      poll_interval: 3, poll_timeout: 180, cleanup_resources_timeout: 300_000, resource_availability_check_max_attempts: 0,
      retry_limit: 5, retry_backoff_max: 2000, retry_limits: {}, print_pod_warning_events: true, pod_disruption_budget: false,
      volumes: { host_path: [], pvc: [], config_map: [], secret: [], empty_dir: [], csi: [], nfs: [] },
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

  it('loads the table GitLab Runner\'s register writes, its zero values read as unset', () => {
    const { kubernetes, warnings } = runner(`${HEAD}  [runners.kubernetes]
    host = ""
    bearer_token_overwrite_allowed = false
    image = ""
    namespace = ""
    namespace_overwrite_allowed = ""
    namespace_per_job = false
    node_selector_overwrite_allowed = ""
    node_tolerations_overwrite_allowed = ""
    pod_labels_overwrite_allowed = ""
    service_account_overwrite_allowed = ""
    pod_annotations_overwrite_allowed = ""
    [runners.kubernetes.init_permissions_container_security_context]
      [runners.kubernetes.init_permissions_container_security_context.capabilities]
    [runners.kubernetes.build_container_security_context]
      [runners.kubernetes.build_container_security_context.capabilities]
    [runners.kubernetes.helper_container_security_context]
      [runners.kubernetes.helper_container_security_context.capabilities]
    [runners.kubernetes.service_container_security_context]
      [runners.kubernetes.service_container_security_context.capabilities]
    [runners.kubernetes.volumes]
    [runners.kubernetes.dns_config]
`);
    expect(warnings).toEqual([]);
    expect(kubernetes).toMatchObject({ namespace: 'default', build_container_security_context: { capabilities: {} } });
    expect(kubernetes.host).toBeUndefined();
    expect(kubernetes.image).toBeUndefined();
    expect(kubernetes.namespace_overwrite_allowed).toBeUndefined();
  });

  it('reads the pod\'s tables: affinity, security contexts, DNS, lifecycle hooks, pod_spec patches, CSI and NFS volumes', () => {
    const { kubernetes, warnings } = runner(`${HEAD}  [runners.kubernetes]
    dns_policy = "none"
    cap_add = ["SYS_TIME"]
    cleanup_resources_timeout = "1m30s"
    [runners.kubernetes.pod_security_context]
      run_as_user = 1000
      [runners.kubernetes.pod_security_context.seccomp_profile]
        type = "Localhost"
        localhost_profile = "profiles/ci.json"
    [runners.kubernetes.build_container_security_context]
      proc_mount = "unmasked"
      [runners.kubernetes.build_container_security_context.capabilities]
        drop = ["ALL"]
    [[runners.kubernetes.affinity.node_affinity.preferred_during_scheduling_ignored_during_execution]]
      weight = 10
      [[runners.kubernetes.affinity.node_affinity.preferred_during_scheduling_ignored_during_execution.preference.match_expressions]]
        key = "disk"
        operator = "In"
        values = ["ssd"]
    [runners.kubernetes.container_lifecycle.post_start.http_get]
      port = 8080
      path = "/ready"
    [[runners.kubernetes.pod_spec]]
      name = "hostname"
      patch = '[{"op": "add", "path": "/hostname", "value": "ci"}]'
      patch_type = "json"
    [[runners.kubernetes.volumes.nfs]]
      name = "share"
      mount_path = "/share"
      server = "nfs.local"
      path = "/export"
`);
    expect(warnings).toEqual([]);
    expect(kubernetes).toMatchObject({
      dns_policy: 'none', cap_add: ['SYS_TIME'], cleanup_resources_timeout: 90_000,
      pod_security_context: { run_as_user: 1000, seccomp_profile: { type: 'Localhost', localhost_profile: 'profiles/ci.json' } },
      build_container_security_context: { proc_mount: 'Unmasked', capabilities: { drop: ['ALL'] } },
      affinity: { node_affinity: { preferred_during_scheduling_ignored_during_execution: [{ weight: 10, preference: { match_expressions: [{ key: 'disk', operator: 'In', values: ['ssd'] }], match_fields: [] } }] } },
      container_lifecycle: { post_start: { http_get: { port: 8080, path: '/ready', http_headers: [] } } },
      pod_spec: [{ name: 'hostname', patch_type: 'json' }],
      volumes: { nfs: [{ name: 'share', mount_path: '/share', server: 'nfs.local', path: '/export', read_only: false }] },
    });
  });

  it('refuses what GitLab Runner would drop with only a log line: a bad profile, an overwrite regex JavaScript cannot run, an ambiguous patch', () => {
    expect(failure(`${HEAD}  [runners.kubernetes.pod_security_context.seccomp_profile]\n    type = "Localhost"\n`)).toContain('type Localhost needs localhost_profile');
    expect(failure(`${HEAD}  [runners.kubernetes]\n    namespace_overwrite_allowed = "(unclosed"\n`)).toContain('`runners.kubernetes.namespace_overwrite_allowed`: a regular expression');
    expect(failure(`${HEAD}  [[runners.kubernetes.pod_spec]]\n    patch = "a: 1"\n    patch_path = "/p.yaml"\n`)).toContain('ambiguous patch: both patch path and patch provided');
    expect(failure(`${HEAD}  [runners.kubernetes]\n    cpu_limit_overwrite_max_allowed = "two"\n`)).toContain('a Kubernetes quantity');
  });

  it('names a misspelt key with its line and a suggestion, and warns about GitLab keys it does not use', () => {
    expect(failure(`${HEAD}  [runners.kubernetes]\n    namepsace = "ci"\n`)).toContain('c.toml:9: unknown key `namepsace` in [runners.kubernetes] (did you mean `namespace`?)');
    const { warnings } = runner(`${HEAD}  [runners.kubernetes]\n    helper_image = "gitlab/helper:x"\n    cleanup_grace_period_seconds = 0\n`);
    expect(runner(`${HEAD}  [runners.kubernetes]\n    cleanup_grace_period_seconds = 0\n`).kubernetes.cleanup_grace_period_seconds).toBe(0);
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

  it('reads a kubeconfig at `context`, refusing one it does not have; a job\'s bearer token replaces the account\'s', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'kubeconfig-'));
    const file = join(dir, 'config');
    await writeFile(file, [
      'apiVersion: v1', 'kind: Config', 'current-context: a',
      'clusters:', '- name: a', '  cluster: { server: "https://a.example:6443" }', '- name: b', '  cluster: { server: "https://b.example:6443" }',
      'users:', '- name: u', '  user: { token: "from-file" }',
      'contexts:', '- name: a', '  context: { cluster: a, user: u }', '- name: ci', '  context: { cluster: b, user: u }',
    ].join('\n'));
    expect(connect({}, { KUBECONFIG: file }).server).toBe('https://a.example:6443');
    const ci = connect({ context: 'ci' }, { KUBECONFIG: file }, 'job-token');
    expect(ci.server).toBe('https://b.example:6443');
    expect(ci.config.getCurrentUser()?.token).toBe('job-token');
    expect(() => connect({ context: 'nope' }, { KUBECONFIG: file })).toThrow(`[runners.kubernetes] context "nope" is not a context of KUBECONFIG ${file} (it has a, ci)`);
  });

  it('uses host and bearer_token over KUBECONFIG', () => {
    const connection = connect({ host: 'https://k8s.example.com:6443/', bearer_token: 'tok' }, { KUBECONFIG: '/nonexistent' });
    expect(connection.server).toBe('https://k8s.example.com:6443');
    expect(connection.config.getCurrentUser()?.token).toBe('tok');
  });
});

describe('docs/executors/kubernetes.md', () => {
  it('names every key of [runners.kubernetes], each with what it does here', async () => {
    const doc = await readFile(new URL('../../docs/executors/kubernetes.md', import.meta.url), 'utf8');
    const named = (key: string) => doc.includes(`\`${key}\``) || (/^(service_|pod_)?(cpu|memory|ephemeral_storage)_(limit|request)(_overwrite_max_allowed)?$|^helper_/.test(key) && doc.includes('_overwrite_max_allowed'));
    expect(Object.keys(KUBERNETES_KEYS.keys).filter((key) => !named(key))).toEqual([]);
  });
});

describe('config.example.toml', () => {
  it('documents every [runners.kubernetes] key', async () => {
    const text = (await readFile(new URL('../../config.example.toml', import.meta.url), 'utf8')).replace(/^(\s*)# (host|context|bearer_token|ca_file|cert_file|key_file) = /gm, '$1$2 = ');
    const { config, warnings } = parseConfig(text, 'config.example.toml');
    expect(warnings).toEqual([]);
    const kubernetes = config.runners.find((r) => r.executor === 'kubernetes')!.kubernetes;
    expect(new Set(Object.keys(kubernetes))).toEqual(new Set(Object.keys(kubernetesSchema.shape)));
    expect(Object.values(kubernetes.volumes).every((list) => list.length > 0)).toBe(true);
  });
});
