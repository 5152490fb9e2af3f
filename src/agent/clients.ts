/**
 * One API client (one set of keep-alive pools) per coordinator: runner entries that share a URL, API
 * choice, TLS material and executor share a client, and so the answer to which API the server speaks.
 */
import type { RunnerApi } from '../client/api.js';
import { createRunnerApi } from '../client/connect.js';
import type { RunnerConfig } from './config/schema.js';
import { runnerTls, type RunnerTlsKeys } from './runner-tls.js';

/** Runner API clients keyed by coordinator; `close` ends every pool. */
export class ClientPool {
  private readonly clients = new Map<string, RunnerApi>();

  /** `systemId`: this host's id, sent over v4 (config/system-id.ts). */
  constructor(private readonly systemId?: string) {}

  /**
   * The client for `runner`, created on first use. `connectionMaxAgeS` is the global
   * `connection_max_age` (0: none); the entry's labels and docker `gpus` go in the v4 `info`.
   */
  get(runner: Pick<RunnerConfig, 'url' | 'api' | 'executor' | 'shell' | 'name' | 'labels' | 'docker' | RunnerTlsKeys>, connectionMaxAgeS = 0): RunnerApi {
    // Keyed by the files' contents, not their paths: a certificate renewed in place is picked up by
    // the next reload (SIGHUP or a config change), as a new pool.
    const tls = runnerTls(runner);
    const gpus = runner.executor === 'docker' ? (runner.docker.gpus ?? '') : '';
    const key = [runner.url, runner.api, runner.executor, runner.shell, tls.ca, tls.cert, tls.key, JSON.stringify(runner.labels), gpus, connectionMaxAgeS].map((v) => v ?? '').join('\u0000');
    let client = this.clients.get(key);
    if (!client) {
      client = createRunnerApi({
        url: runner.url, api: runner.api, executor: runner.executor, shell: runner.shell, tls, systemId: this.systemId,
        labels: runner.labels, gpus, ...(connectionMaxAgeS > 0 ? { connectionMaxAgeMs: connectionMaxAgeS * 1000 } : {}),
      });
      this.clients.set(key, client);
    }
    return client;
  }

  async close(): Promise<void> {
    const all = [...this.clients.values()];
    this.clients.clear();
    await Promise.all(all.map((c) => c.close().catch(() => undefined)));
  }
}
