/**
 * One API client (one undici keep-alive pool) per coordinator: runner entries that share a URL, CA
 * file and executor share a client.
 */
import { RunnerApiClient } from '../client/runner-api.js';
import type { RunnerConfig } from './config/schema.js';

/** Runner API clients keyed by coordinator; `close` ends every pool. */
export class ClientPool {
  private readonly clients = new Map<string, RunnerApiClient>();

  /** The client for `runner`, created on first use. */
  get(runner: Pick<RunnerConfig, 'url' | 'tls-ca-file' | 'executor'>): RunnerApiClient {
    const key = `${runner.url}\u0000${runner['tls-ca-file'] ?? ''}\u0000${runner.executor}`;
    let client = this.clients.get(key);
    if (!client) {
      client = new RunnerApiClient({
        url: runner.url,
        executor: runner.executor,
        ...(runner['tls-ca-file'] ? { tlsCaFile: runner['tls-ca-file'] } : {}),
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
