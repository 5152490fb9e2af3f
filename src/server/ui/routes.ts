/**
 * The web page's routes, on the reference server's own port: page paths (`/`, `/pipelines/:id`,
 * `/jobs/:id`, `/runners`, `/pipelines/new`) answer the app shell, or the sign-in form without the
 * admin token's cookie; `/-/ui/…` holds the assets, the JSON the page reads, its event streams and
 * its actions. Returns false for any other path, which the dispatcher then answers itself.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ServerContext } from '../context.js';
import { bodyParams } from '../http/body.js';
import { readBudgetedBody } from '../http/guarded-body.js';
import { errorReply, json, type Reply } from '../http/reply.js';
import { writeReply } from '../http/write.js';
import { artifactsFileReply } from '../api/artifacts.js';
import { jobAction, newRunner, runnerAction, runPipeline } from './actions.js';
import { assetReply } from './assets.js';
import { streamChanges, type ChangeHub } from './events.js';
import { appPage, safeNext, signInPage } from './page.js';
import { csrfToken, refusePost, sameOrigin, signedIn, signInCookie, signOutCookie } from './session.js';
import { sameSecret } from '../tokens.js';
import { streamTrace, traceDownload } from './trace-stream.js';
import { jobDetail, pipelineDetail, pipelinesPage, runnerDetail } from './views.js';

export type UiHandler = (req: IncomingMessage, res: ServerResponse, url: URL, signal: AbortSignal) => Promise<boolean>;

const PAGE_PATHS = /^\/(?:|runners|pipelines\/new|pipelines\/\d+|jobs\/\d+)$/;

function num(text: string | undefined): number {
  return text !== undefined && /^\d{1,15}$/.test(text) ? Number(text) : -1;
}

/** Creates the handler; `hub` announces state changes to open pages. */
export function createUiHandler(ctx: ServerContext, hub: ChangeHub): UiHandler {
  const token = (): string => ctx.settings.adminToken;
  return async (req, res, url, signal) => {
    const path = url.pathname;
    const method = req.method ?? 'GET';
    if (PAGE_PATHS.test(path) && (method === 'GET' || method === 'HEAD')) {
      const reply = signedIn(req, token()) ? appPage(csrfToken(token())) : signInPage(200, path + url.search);
      await writeReply(res, reply);
      return true;
    }
    if (!path.startsWith('/-/ui/')) return false;
    const rest = path.slice('/-/ui/'.length).split('/');
    const [first, second, third, fourth, fifth] = rest;
    if ((first === 'assets' || first === 'vendor') && second !== undefined && third === undefined && method === 'GET') {
      const header = req.headers['if-none-match'];
      await writeReply(res, (await assetReply(first, second, Array.isArray(header) ? header[0] : header)) ?? errorReply(404));
      return true;
    }
    if (first === 'sign-in' && rest.length === 1 && method === 'POST') {
      await writeReply(res, await signIn(ctx, req, signal));
      return true;
    }
    if (first !== 'api') {
      await writeReply(res, errorReply(404));
      return true;
    }
    if (method === 'POST') {
      const refused = refusePost(req, token());
      if (refused) {
        await writeReply(res, errorReply(refused.status, refused.message));
        return true;
      }
    } else if (!signedIn(req, token())) {
      await writeReply(res, errorReply(401, 'sign in first'));
      return true;
    }
    if (second === 'events' && third === undefined && method === 'GET') {
      await streamChanges(hub, res, signal);
      return true;
    }
    if (second === 'jobs' && fourth === 'trace' && fifth === 'events' && method === 'GET') {
      const build = ctx.store.buildById(num(third));
      if (!build) await writeReply(res, errorReply(404, 'no such job'));
      else await streamTrace(ctx, hub, build, req, res, url.searchParams, signal);
      return true;
    }
    await writeReply(res, await apiReply(ctx, req, method, rest.slice(1), url.searchParams, signal));
    return true;
  };
}

async function signIn(ctx: ServerContext, req: IncomingMessage, signal: AbortSignal): Promise<Reply> {
  if (!sameOrigin(req)) return errorReply(403, 'cross-origin sign-in refused');
  const params = await bodyParams(req, await readBudgetedBody(req, 16 * 1024, ctx.bodies.preAuth, signal));
  const next = safeNext(typeof params.next === 'string' ? params.next : undefined);
  const given = typeof params.token === 'string' ? params.token.trim() : '';
  if (!sameSecret(given, ctx.settings.adminToken)) {
    ctx.logger.warn({ component: 'ui' }, 'web page sign-in with a wrong admin token');
    return signInPage(401, next, 'That is not this server\'s admin token.');
  }
  return { status: 303, headers: { location: next, 'set-cookie': signInCookie(req, ctx.settings.adminToken), 'cache-control': 'no-store' }, body: '' };
}

/** The JSON API under `/-/ui/api/`; `parts` follow `api`. */
async function apiReply(ctx: ServerContext, req: IncomingMessage, method: string, parts: string[], query: URLSearchParams, signal: AbortSignal): Promise<Reply> {
  const [resource, idText, action, extra] = parts;
  if (extra !== undefined) return errorReply(404);
  if (resource === 'sign-out' && method === 'POST') return { status: 204, headers: { 'set-cookie': signOutCookie(req) } };
  if (resource === 'projects' && idText === undefined && method === 'GET') {
    return json(200, [...ctx.store.projects.values()].map((p) => ({ id: p.id, name: p.name })));
  }
  if (resource === 'runners' && idText === undefined && method === 'GET') {
    return json(200, [...ctx.store.runners.values()].map((r) => runnerDetail(ctx, r)));
  }
  if (resource === 'runners' && idText === undefined && method === 'POST') return newRunner(ctx, req, signal);
  if (resource === 'runners' && action !== undefined && method === 'POST') return runnerAction(ctx, num(idText), action);
  if (resource === 'pipelines' && idText === undefined) {
    if (method === 'POST') return runPipeline(ctx, req, signal);
    if (method === 'GET') {
      const before = query.get('before');
      return json(200, pipelinesPage(ctx, before === null ? undefined : num(before)));
    }
  }
  if (resource === 'pipelines' && action === undefined && method === 'GET') {
    const pipeline = ctx.store.pipelines.get(num(idText));
    return pipeline ? json(200, pipelineDetail(ctx, pipeline)) : errorReply(404, 'no such pipeline');
  }
  if (resource !== 'jobs') return errorReply(404);
  const build = ctx.store.buildById(num(idText));
  if (!build) return errorReply(404, 'no such job');
  if (action === undefined && method === 'GET') return json(200, jobDetail(ctx, build));
  if (action === 'trace' && method === 'GET') return traceDownload(ctx, build, req);
  if (action === 'artifacts' && method === 'GET') return artifactsFileReply(build);
  if (action !== undefined && method === 'POST') return jobAction(ctx, build, action);
  return errorReply(405);
}
