/**
 * The request entry point: routes to the runner API, the admin API or git, applies fault rules
 * around the handler, writes the reply and logs the request. Any exception becomes a 500 (or the
 * status an `HttpError` carries); nothing a client sends can take the server down.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { handleAdmin } from './admin.js';
import { matchApiPath } from './api/match.js';
import type { ServerContext } from './context.js';
import { faultHeaders } from './faults.js';
import type { FaultEndpoint, FaultRule } from './types.js';
import type { ServerStatus } from './status.js';
import type { UiHandler } from './ui/routes.js';
import { errorReply, HttpError, type Reply } from './http/reply.js';
import { discardUnreadBody } from './http/unread-body.js';
import { writeCutReply, writeReply } from './http/write.js';

export type GitHandler = (req: IncomingMessage, res: ServerResponse, pathname: string, signal?: AbortSignal) => Promise<boolean>;

const ADMIN_PREFIX = '/admin/api';

/** Creates the `request` listener of the node:http server. */
export function createDispatcher(
  ctx: ServerContext,
  git: GitHandler | undefined,
  status?: ServerStatus,
  ui?: UiHandler,
): (req: IncomingMessage, res: ServerResponse) => void {
  const log = ctx.logger.child({ component: 'http' });
  return (req, res) => {
    const started = Date.now();
    // One signal per request: aborted when the client goes away or the server closes. (Not
    // AbortSignal.any over the long-lived closing signal, which keeps every request's signal alive.)
    const controller = new AbortController();
    const abort = (): void => controller.abort();
    if (ctx.closing.aborted) abort();
    else ctx.closing.addEventListener('abort', abort, { once: true });
    res.on('close', () => {
      ctx.closing.removeEventListener('abort', abort);
      abort();
    });
    const signal = controller.signal;
    res.on('finish', () => {
      discardUnreadBody(req);
      log.info({ method: req.method, url: req.url, status: res.statusCode, ms: Date.now() - started }, 'request');
      status?.count(req.method, req.url, res.statusCode);
    });
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const handled = status && (path === '/metrics' || path === '/healthz') ? status.handle(req, res, path) : Promise.resolve(false);
    handled.then((done) => (done ? undefined : dispatch(ctx, req, res, signal, git, ui))).catch((error: unknown) => {
      const status = error instanceof HttpError ? error.status : 500;
      if (status >= 500) log.error({ err: error, method: req.method, url: req.url }, 'request failed');
      if (status === 499) {
        res.destroy();
        return;
      }
      if (!res.headersSent && !res.destroyed) {
        void writeReply(res, errorReply(status, error instanceof HttpError ? error.message : undefined));
      } else {
        res.destroy();
      }
    });
  };
}

async function dispatch(
  ctx: ServerContext,
  req: IncomingMessage,
  res: ServerResponse,
  signal: AbortSignal,
  git: GitHandler | undefined,
  ui: UiHandler | undefined,
): Promise<void> {
  let url: URL;
  try {
    url = new URL(req.url ?? '/', 'http://reference.invalid');
  } catch {
    await writeReply(res, errorReply(400, '400 Bad Request - malformed request target'));
    return;
  }
  const method = req.method ?? 'GET';
  const path = url.pathname;

  const routed = matchApiPath(method, path);
  if (routed !== undefined) {
    const { match } = routed;
    if (match.kind === 'none') return writeReply(res, errorReply(404, `404 Not Found - no route ${method} ${path}`));
    if (match.kind === 'method') return writeReply(res, errorReply(405, undefined, { allow: match.allow.join(', ') }));
    const request = { req, query: url.searchParams, signal, ...(match.buildId !== undefined ? { buildId: match.buildId } : {}) };
    return withFaults(ctx, res, match.endpoint, match.buildId, signal, () => match.handler(ctx, request));
  }
  // The public key of the `id_tokens:` this server signs, where GitLab serves its own (state/id-tokens.ts).
  if (method === 'GET' && path === '/oauth/discovery/keys') {
    const { idTokenJwks } = await import('./state/id-tokens.js');
    return writeReply(res, { status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(idTokenJwks(ctx)) });
  }
  if (path === ADMIN_PREFIX || path.startsWith(`${ADMIN_PREFIX}/`)) {
    return writeReply(res, await handleAdmin(ctx, req, path.slice(ADMIN_PREFIX.length), url.searchParams, signal));
  }
  // The web page's paths never end in `.git`, so no project's repository is hidden by them.
  if (ui && !/\.git(\/|$)/.test(path) && (await ui(req, res, url, signal))) return;
  if (git && /\.git(\/|$)/.test(path)) {
    const rule = ctx.faults.pick('git', undefined);
    if (rule && (await beforeHandler(rule, res, signal))) return;
    if (rule?.action === 'close' || rule?.action === 'apply_then_error') {
      // git writes its own response; these two cannot be applied after it, so they cut the connection.
      res.destroy();
      return;
    }
    if (await git(req, res, path, signal)) return;
  }
  await writeReply(res, errorReply(404, `404 Not Found - no route ${method} ${path}`));
}

/**
 * Runs the pre-handler part of a fault. Returns true when the request is fully dealt with (an
 * error was answered or the request hung until the client or server gave up).
 */
async function beforeHandler(rule: FaultRule, res: ServerResponse, signal: AbortSignal): Promise<boolean> {
  if (rule.action === 'error') {
    await writeReply(res, errorReply(rule.status ?? 500, undefined, { connection: 'close', ...faultHeaders(rule.status ?? 500) }));
    return true;
  }
  if (rule.action === 'hang') {
    await new Promise<void>((resolve) => {
      if (signal.aborted) resolve();
      else signal.addEventListener('abort', () => resolve(), { once: true });
    });
    res.destroy();
    return true;
  }
  if (rule.action === 'delay') await sleep(rule.delayMs ?? 1000, undefined, { signal }).catch(() => undefined);
  return false;
}

async function withFaults(
  ctx: ServerContext,
  res: ServerResponse,
  endpoint: Exclude<FaultEndpoint, '*'>,
  buildId: number | undefined,
  signal: AbortSignal,
  handler: () => Promise<Reply>,
): Promise<void> {
  const rule = ctx.faults.pick(endpoint, buildId);
  if (rule) {
    ctx.logger.info({ endpoint, buildId, action: rule.action }, 'fault injected');
    if (await beforeHandler(rule, res, signal)) return;
  }
  const reply = await handler();
  if (rule?.action === 'apply_then_error') {
    if (reply.body && typeof reply.body === 'object' && 'destroy' in reply.body) reply.body.destroy();
    await writeReply(res, errorReply(rule.status ?? 500, undefined, faultHeaders(rule.status ?? 500)));
    return;
  }
  if (rule?.action === 'close') {
    writeCutReply(res, reply);
    return;
  }
  await writeReply(res, reply);
}
