/**
 * The daemon's status server on `listen_address`: `/metrics` (Prometheus text), `/healthz` (the
 * process answers), `/readyz` (some entry can take jobs; 503 with a reason per runner otherwise),
 * `/debug/jobs` (the running jobs, JSON); and GitLab Runner's own routes: `/debug/jobs/list` (its
 * text format), `/debug/process/state` and `/health/ready`. Plain node:http: a few read-only routes
 * need no framework.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../../log/index.js';
import type { RunnerReadiness } from '../readiness.js';
import { formatListenAddress, type ListenAddress } from '../config/listen-address.js';
import type { RunningJob } from './registry.js';

export interface StatusSource {
  /** Undefined while no config is loaded (not in `run`, which starts with one). */
  readiness(): { stopping: boolean; runners: RunnerReadiness[] } | undefined;
  runningJobs(): RunningJob[];
  /** GitLab Runner's `/debug/jobs/list` body. */
  runningJobsText(): string;
  /** starting, running, graceful-shutdown or forceful-shutdown. */
  processState(): string;
  scrape(): Promise<{ contentType: string; body: string }>;
}

export interface StatusServer {
  /** `http://host:port` as bound (port 0 resolved). */
  readonly url: string;
  close(): Promise<void>;
}

/** Binds `address`; rejects with the listen error (EADDRINUSE, EACCES) for the caller to report. */
export async function startStatusServer(address: ListenAddress, source: StatusSource, logger: Logger): Promise<StatusServer> {
  const server = createServer((req, res) => {
    handle(req, res, source).catch((error: unknown) => {
      logger.error({ err: error, path: req.url }, 'status server: request failed');
      if (!res.headersSent) send(res, 500, { error: 'internal error' });
      else res.destroy();
    });
  });
  // Scrapers keep connections alive; idle ones must not hold the daemon's shutdown.
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(address.port, address.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.on('error', (error) => logger.error({ err: error }, 'status server error'));
  return {
    url: formatListenAddress(server.address() as AddressInfo),
    close: () => closeServer(server),
  };
}

async function handle(req: IncomingMessage, res: ServerResponse, source: StatusSource): Promise<void> {
  const path = (req.url ?? '/').split('?')[0];
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.setHeader('allow', 'GET, HEAD');
    send(res, 405, { error: 'only GET and HEAD' });
    return;
  }
  switch (path) {
    case '/metrics': {
      const { contentType, body } = await source.scrape();
      res.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-store' });
      res.end(req.method === 'HEAD' ? undefined : body);
      return;
    }
    case '/healthz':
      send(res, 200, { status: 'ok' });
      return;
    case '/readyz': {
      const state = source.readiness();
      if (!state) {
        send(res, 503, { ready: false, reason: 'no configuration loaded', runners: [] });
        return;
      }
      const ready = !state.stopping && state.runners.some((r) => r.ready);
      const reason = state.stopping ? 'shutting down' : state.runners.length === 0 ? 'no [[runners]] in the config' : ready ? undefined : 'no runner can take jobs';
      send(res, ready ? 200 : 503, { ready, ...(reason ? { reason } : {}), runners: state.runners });
      return;
    }
    case '/debug/jobs':
      send(res, 200, { jobs: source.runningJobs() });
      return;
    case '/debug/jobs/list':
      sendText(res, 200, source.runningJobsText(), { 'x-list-version': '2' });
      return;
    case '/debug/process/state':
      sendText(res, 200, `${source.processState()}\n`);
      return;
    case '/health/ready':
      // GitLab Runner answers ready once it runs (its boot check passed); this daemon runs once it listens.
      sendText(res, 200, 'ready\n');
      return;
    default:
      send(res, 404, { error: 'not found', routes: ['/metrics', '/healthz', '/readyz', '/health/ready', '/debug/jobs', '/debug/jobs/list', '/debug/process/state'] });
  }
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = `${JSON.stringify(body)}\n`;
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(res.req.method === 'HEAD' ? undefined : text);
}

function sendText(res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'text/plain', 'cache-control': 'no-store', ...headers });
  res.end(res.req.method === 'HEAD' ? undefined : text);
}

async function closeServer(server: Server): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  // A scrape in progress gets a moment; then its connection is cut.
  const timer = setTimeout(() => server.closeAllConnections(), 2_000);
  await closed;
  clearTimeout(timer);
}
