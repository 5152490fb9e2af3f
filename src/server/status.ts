/**
 * The reference server's own `/metrics` and `/healthz`: builds by status, the pending queue, each
 * runner's last contact, and requests by route and status. Requests are counted in a plain map;
 * prom-client is loaded on the first scrape only, and reads the server's state when scraped.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';
import { VERSION } from '../util/version.js';
import { matchApiPath } from './api/match.js';
import type { ServerContext } from './context.js';


export class ServerStatus {
  private readonly requests = new Map<string, { route: string; method: string; status: string; count: number }>();
  private registry: Promise<Registry> | undefined;

  constructor(private readonly ctx: ServerContext) {}

  /** Counts one finished request under a bounded route name (never its path or query). */
  count(method: string | undefined, url: string | undefined, status: number): void {
    const route = routeOf(method ?? 'GET', url ?? '/');
    const verb = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'].includes(method ?? '') ? (method as string) : 'OTHER';
    const key = `${route} ${verb} ${status}`;
    const entry = this.requests.get(key);
    if (entry) entry.count += 1;
    else this.requests.set(key, { route, method: verb, status: String(status), count: 1 });
  }

  /** Answers `/metrics` and `/healthz`; false for any other path. */
  async handle(req: IncomingMessage, res: ServerResponse, path: string): Promise<boolean> {
    if (path === '/healthz') {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}\n');
      return true;
    }
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) return false;
    this.registry ??= this.createRegistry();
    const registry = await this.registry;
    const body = await registry.metrics();
    res.writeHead(200, { 'content-type': registry.contentType, 'cache-control': 'no-store' }).end(req.method === 'HEAD' ? undefined : body);
    return true;
  }

  private async createRegistry(): Promise<Registry> {
    const [{ Counter, Gauge, Registry }, { collectProcessMetrics }] = await Promise.all([import('prom-client'), import('../metrics/prom.js')]);
    const registry = new Registry();
    const registers = [registry];
    collectProcessMetrics(registry);
    const { store } = this.ctx;
    const requests = this.requests;
    new Gauge({
      name: 'ci_server_builds',
      help: 'Builds by status',
      labelNames: ['status'],
      registers,
      collect() {
        this.reset();
        for (const status of ['created', 'waiting_for_resource', 'pending', 'running', 'success', 'failed', 'canceled', 'skipped', 'manual', 'scheduled']) this.set({ status }, 0);
        for (const build of store.builds.values()) this.inc({ status: build.status });
      },
    });
    new Gauge({
      name: 'ci_server_queue_depth',
      help: 'Builds pending, waiting for a runner',
      registers,
      collect() {
        let pending = 0;
        for (const build of store.builds.values()) if (build.status === 'pending') pending += 1;
        this.set(pending);
      },
    });
    new Gauge({
      name: 'ci_server_runner_last_contact_timestamp_seconds',
      help: "Each runner's last contact, Unix time (0: never)",
      labelNames: ['runner_id', 'description'],
      registers,
      collect() {
        this.reset();
        for (const runner of store.runners.values()) this.set({ runner_id: String(runner.id), description: runner.description }, runner.contactedAt ? runner.contactedAt.getTime() / 1000 : 0);
      },
    });
    new Counter({
      name: 'ci_server_http_requests_total',
      help: 'Requests by route, method and status',
      labelNames: ['route', 'method', 'status'],
      registers,
      collect() {
        this.reset();
        for (const { route, method, status, count } of requests.values()) this.inc({ route, method, status }, count);
      },
    });
    new Gauge({ name: 'ci_server_version_info', help: 'Version of the reference server', labelNames: ['version'], registers }).set({ version: VERSION }, 1);
    return registry;
  }
}

/** A bounded name for a request's route: the runner API endpoint, or its area. */
function routeOf(method: string, url: string): string {
  const path = url.split('?')[0] ?? '/';
  const routed = matchApiPath(method, path);
  if (routed) {
    // v1's endpoints keep their names; v4's are prefixed (`v4_request_build`).
    const prefix = routed.api === 'v4' ? 'v4_' : '';
    return routed.match.kind === 'found' ? `${prefix}${routed.match.endpoint}` : `${prefix}api_unmatched`;
  }
  if (path.startsWith('/admin/api')) return 'admin';
  if (/\.git(\/|$)/.test(path)) return 'git';
  if (path === '/metrics' || path === '/healthz') return path.slice(1);
  if (path.startsWith('/-/ui/')) return 'ui';
  return 'other';
}
