/**
 * One API client (one set of keep-alive pools) per coordinator: runner entries that share a URL, TLS
 * material and executor share a client.
 */
import { RunnerApiClient } from '../client/runner-api.js';
import type { RunnerConfig } from './config/schema.js';
import { runnerTls, type RunnerTlsKeys } from './runner-tls.js';

/** Runner API clients keyed by coordinator; `close` ends every pool. */
export class ClientPool {
  private readonly clients = new Map<string, RunnerApiClient>();

  /** The client for `runner`, created on first use. */
  get(runner: Pick<RunnerConfig, 'url' | 'executor' | 'name' | RunnerTlsKeys>): RunnerApiClient {
    // Keyed by the files' contents, not their paths: a certificate renewed in place is picked up by
    // the next reload (SIGHUP or a config change), as a new pool.
    const tls = runnerTls(runner);
    const key = [runner.url, runner.executor, tls.ca, tls.cert, tls.key].map((v) => v ?? '').join('\u0000');
    let client = this.clients.get(key);
    if (!client) {
      client = new RunnerApiClient({ url: runner.url, executor: runner.executor, tls });
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
