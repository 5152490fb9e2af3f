/**
 * The job's Secrets, so nothing secret is written into the pod spec: the services' environment (the
 * job's variables, minus the job's and the runner's tokens) reaches their containers through
 * `envFrom`, and the job's registry credentials become an image pull secret. Both carry the job's
 * labels and are deleted with the pod (or, after a crash, by the next start's sweep).
 */
import type { V1Secret } from '@kubernetes/client-node';
import type { BuildCredential } from '../../protocol/types.js';

/**
 * The `.dockerconfigjson` of the job's logins: DOCKER_AUTH_CONFIG's `auths` first (docker-auth-config.ts),
 * then its `registry` credentials, the first naming a registry winning as in GitLab Runner; undefined
 * when it has none.
 */
export function registryConfig(credentials: readonly BuildCredential[], jobAuths: Record<string, { auth: string }> = {}): string | undefined {
  const auths: Record<string, { username?: string; password?: string; auth: string }> = { ...jobAuths };
  for (const c of credentials) {
    if (c.type !== 'registry' || !c.url) continue;
    auths[c.url] ??= { username: c.username, password: c.password, auth: Buffer.from(`${c.username}:${c.password}`).toString('base64') };
  }
  return Object.keys(auths).length > 0 ? JSON.stringify({ auths }) : undefined;
}

export function registrySecret(name: string, namespace: string, labels: Record<string, string>, dockerConfig: string): V1Secret {
  return { apiVersion: 'v1', kind: 'Secret', type: 'kubernetes.io/dockerconfigjson', metadata: { name, namespace, labels }, stringData: { '.dockerconfigjson': dockerConfig } };
}

export function environmentSecret(name: string, namespace: string, labels: Record<string, string>, env: Record<string, string>): V1Secret {
  return { apiVersion: 'v1', kind: 'Secret', type: 'Opaque', metadata: { name, namespace, labels }, stringData: env };
}
