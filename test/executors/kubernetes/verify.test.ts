/**
 * `ci-runner verify` on kubernetes runners: the cluster asked (SelfSubjectAccessReview) whether the
 * runner's account may do what the executor does, with the Role of packaging/kubernetes/rbac.yaml
 * enough and a Role without exec named as such (and a client certificate as the credentials); the
 * agent's check before an entry polls says the same.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import type { V1PolicyRule, V1Role } from '@kubernetes/client-node';
import { RbacAuthorizationV1Api, KubeConfig } from '@kubernetes/client-node';
import { runnerSchema } from '../../../src/agent/config/schema.js';
import { checkExecutor } from '../../../src/agent/executor-check.js';
import { cli } from '../../cli/cli.js';
import { waitUntil, workDirs } from '../../cli/helpers.js';
import type { TestServer } from '../../helpers/server.js';
import { REPO } from '../../image/image.js';
import { cluster, skipKubernetes } from './cluster.js';
import { useKubernetesTestServer, useNamespace } from './jobs.js';

let t: TestServer;
useKubernetesTestServer((server) => {
  t = server;
});

const namespace = await useNamespace('ci-runner-test-verify');

/** A ServiceAccount bound to a Role with `rules`; its token (from the legacy token Secret Kubernetes 1.20 makes). */
async function account(name: string, rules: V1PolicyRule[]): Promise<string> {
  const config = new KubeConfig();
  config.loadFromFile(cluster!.kubeconfig);
  const rbac = config.makeApiClient(RbacAuthorizationV1Api);
  const ignoreExisting = (error: unknown): void => {
    if ((error as { code?: number }).code !== 409) throw error;
  };
  await cluster!.core.createNamespacedServiceAccount({ namespace, body: { metadata: { name } } }).catch(ignoreExisting);
  // An earlier run's Role is brought up to date: the packaged rules change with the executor.
  await rbac.createNamespacedRole({ namespace, body: { metadata: { name }, rules } }).catch(async (error: unknown) => {
    ignoreExisting(error);
    await rbac.replaceNamespacedRole({ name, namespace, body: { metadata: { name }, rules } });
  });
  await rbac.createNamespacedRoleBinding({ namespace, body: { metadata: { name }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name }, subjects: [{ kind: 'ServiceAccount', name, namespace }] } }).catch(ignoreExisting);
  let token = '';
  await waitUntil(async () => {
    const sa = await cluster!.core.readNamespacedServiceAccount({ name, namespace });
    const secret = sa.secrets?.[0]?.name;
    if (!secret) return false;
    token = Buffer.from((await cluster!.core.readNamespacedSecret({ name: secret, namespace })).data?.token ?? '', 'base64').toString();
    return token !== '';
  }, 30_000, `the token of ${name}`);
  return token;
}

describe.skipIf(skipKubernetes)('verify with kubernetes runners', () => {
  it('says a runner with the packaged Role may run jobs, and names the permissions another one lacks', async () => {
    const rbac = parseAllDocuments(await readFile(join(REPO, 'packaging/kubernetes/rbac.yaml'), 'utf8')).map((d) => d.toJS() as V1Role);
    const packaged = rbac.find((d) => (d as { kind?: string }).kind === 'Role')!.rules!;
    const full = await account('packaged', packaged);
    const limited = await account('no-exec', packaged.filter((rule) => !rule.resources?.includes('pods/exec')));
    const dirs = await workDirs();
    const entry = async (name: string, auth: string[]) => [
      '[[runners]]',
      `  name = "${name}"`,
      `  url = "${t.url}"`,
      `  token = "${(await t.registerRunner()).token}"`,
      '  executor = "kubernetes"',
      '  [runners.kubernetes]',
      `    host = "${cluster!.api}"`,
      ...auth.map((line) => `    ${line}`),
      `    ca_file = "${cluster!.caFile}"`,
      `    namespace = "${namespace}"`,
    ].join('\n');
    // The kit's admin client certificate sits beside its CA.
    const pki = dirname(cluster!.caFile);
    const file = join(dirs.root, 'config.toml');
    const entries = [
      await entry('packaged', [`bearer_token = "${full}"`]),
      await entry('no-exec', [`bearer_token = "${limited}"`]),
      await entry('client-cert', [`cert_file = "${join(pki, 'admin.crt')}"`, `key_file = "${join(pki, 'admin.key')}"`]),
      await entry('with-budget', [`bearer_token = "${full}"`, 'pod_disruption_budget = true']),
    ];
    await writeFile(file, `${entries.join('\n')}\n`, { mode: 0o600 });
    const result = await cli(['verify', '-c', file]);
    expect(result.all).toMatch(/Verified runner "packaged": Kubernetes v1\.20\.\d+ at https:\/\/127\.0\.0\.1:6443 \(from \[runners\.kubernetes\] host\): may run jobs in namespace "ci-runner-test-verify"/);
    expect(result.all).toContain('Could not verify runner "no-exec": the account of https://127.0.0.1:6443 (from [runners.kubernetes] host) may not create pods/exec, get pods/exec in namespace "ci-runner-test-verify"');
    expect(result.all).toMatch(/Verified runner "client-cert": Kubernetes v1\.20\.\d+ at https:\/\/127\.0\.0\.1:6443/);
    // What a key asks for beyond the packaged Role is asked for too.
    expect(result.all).toContain('Could not verify runner "with-budget": the account of https://127.0.0.1:6443 (from [runners.kubernetes] host) may not create poddisruptionbudgets, delete poddisruptionbudgets');
    expect(result.exitCode).toBe(3);

    // The agent asks the same before an entry polls: the one without exec takes no jobs, saying why.
    const options = (token: string) => runnerSchema.parse({ url: t.url, token: 'x', executor: 'kubernetes', kubernetes: { host: cluster!.api, bearer_token: token, ca_file: cluster!.caFile, namespace } });
    expect(await checkExecutor(options(full))).toMatchObject({ ok: true });
    expect(await checkExecutor(options(limited))).toEqual({ ok: false, reason: expect.stringContaining('may not create pods/exec, get pods/exec') });
  });
});
