/**
 * Which cluster, as whom: `host` with `bearer_token`, `ca_file` and `cert_file`/`key_file` from
 * `[runners.kubernetes]`; else the file KUBECONFIG names; else the pod's service account when the
 * runner itself runs in a pod (KUBERNETES_SERVICE_HOST); else ~/.kube/config. A kubeconfig file is
 * read at its `context` when that key names one (kubectl's `--context`). A job's bearer token
 * (KUBERNETES_BEARER_TOKEN, where `bearer_token_overwrite_allowed`) replaces the account's
 * credentials, as GitLab Runner's does.
 */
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { CiRunnerError } from '../../util/errors.js';
import type { KubernetesOptions } from './options.js';

/** The cluster cannot be reached as configured (a missing file, no configuration at all). */
export class KubernetesConfigError extends CiRunnerError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('KUBERNETES_CONFIG', message, options);
  }
}

export interface Connection {
  config: KubeConfig;
  /** Where the settings came from, for logs and `verify` (`[runners.kubernetes] host`, `KUBECONFIG /path`, …). */
  source: string;
  server: string;
}

type ConnectionKeys = Pick<KubernetesOptions, 'host' | 'bearer_token' | 'ca_file' | 'cert_file' | 'key_file' | 'context'>;

/** Builds the client configuration; throws {@link KubernetesConfigError} with what to fix. */
export function connect(options: ConnectionKeys, env: NodeJS.ProcessEnv = process.env, bearerToken?: string): Connection {
  const config = new KubeConfig();
  let source: string;
  if (options.host) {
    for (const key of ['ca_file', 'cert_file', 'key_file'] as const) {
      const file = options[key];
      if (file && !existsSync(file)) throw new KubernetesConfigError(`[runners.kubernetes] ${key} "${file}" does not exist`);
    }
    if (Boolean(options.cert_file) !== Boolean(options.key_file)) throw new KubernetesConfigError('[runners.kubernetes] cert_file and key_file go together: set both or neither');
    config.loadFromOptions({
      // Plain http:// has no TLS to verify; the library refuses it unless told so.
      clusters: [{ name: 'runner', server: options.host.replace(/\/+$/, ''), skipTLSVerify: options.host.startsWith('http://'), ...(options.ca_file ? { caFile: options.ca_file } : {}) }],
      users: [{ name: 'runner', ...(options.bearer_token ? { token: options.bearer_token } : {}), ...(options.cert_file ? { certFile: options.cert_file, keyFile: options.key_file } : {}) }],
      contexts: [{ name: 'runner', cluster: 'runner', user: 'runner' }],
      currentContext: 'runner',
    });
    source = '[runners.kubernetes] host';
  } else if (env.KUBECONFIG) {
    const files = env.KUBECONFIG.split(':').filter(Boolean);
    const missing = files.find((file) => !existsSync(file));
    if (missing) throw new KubernetesConfigError(`KUBECONFIG names "${missing}", which does not exist`);
    // As the library's loadFromDefault does, but from `env` (it reads process.env).
    load(
      config,
      () => {
        const [first = '', ...more] = files;
        config.loadFromFile(first);
        for (const file of more) {
          const next = new KubeConfig();
          next.loadFromFile(file);
          config.mergeConfig(next, false);
        }
      },
      `KUBECONFIG ${env.KUBECONFIG}`,
    );
    source = `KUBECONFIG ${env.KUBECONFIG}`;
    useContext(config, options.context, source);
  } else if (env.KUBERNETES_SERVICE_HOST) {
    load(config, () => config.loadFromCluster(), 'the in-cluster service account');
    source = 'the pod\'s service account';
  } else {
    const file = join(env.HOME || homedir(), '.kube', 'config');
    if (!existsSync(file)) {
      throw new KubernetesConfigError(`no cluster configured: set [runners.kubernetes] host (with bearer_token or cert_file/key_file, and ca_file), KUBECONFIG, or run the runner in a pod`);
    }
    load(config, () => config.loadFromFile(file), file);
    source = file;
    useContext(config, options.context, source);
  }
  const cluster = config.getCurrentCluster();
  if (!cluster) throw new KubernetesConfigError(`${source}: no current cluster (check current-context)`);
  if (bearerToken) withToken(config, bearerToken);
  return { config, source, server: cluster.server };
}

/** `[runners.kubernetes] context`, when set: it must be one of the file's. */
function useContext(config: KubeConfig, context: string | undefined, source: string): void {
  if (!context) return;
  if (!config.getContextObject(context)) throw new KubernetesConfigError(`[runners.kubernetes] context "${context}" is not a context of ${source} (it has ${config.getContexts().map((c) => c.name).join(', ') || 'none'})`);
  config.setCurrentContext(context);
}

/** The current user's token replaced (its other credentials kept, as client-go keeps them). */
function withToken(config: KubeConfig, token: string): void {
  const current = config.getCurrentUser();
  config.users = config.users.map((user) => (user.name === current?.name ? { ...user, token } : user));
}

function load(config: KubeConfig, fn: () => void, what: string): void {
  try {
    fn();
  } catch (error) {
    throw new KubernetesConfigError(`${what} could not be read: ${(error as Error).message}`, { cause: error });
  }
}

/** The namespace the runner's own pod runs in, when it runs in one (the service account's file). */
export function ownNamespace(): string | undefined {
  try {
    return readFileSync('/var/run/secrets/kubernetes.io/serviceaccount/namespace', 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}
