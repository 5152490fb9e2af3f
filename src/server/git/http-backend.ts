/**
 * Serves projects' git repositories over smart HTTP, read-only, by running `git http-backend` as a CGI
 * program per request. Clients authenticate with Basic auth (`gitlab-ci-token:<build token>`), as the
 * build payload's `repo_url` carries it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { execa } from 'execa';
import type { Logger } from '../../log/index.js';
import { runCgi } from './cgi.js';
import { routeGitPath, type GitEndpoint } from './route.js';

export interface GitHttpHandlerOptions {
  /** The repository path of project `namespace/name`, or undefined when there is no such project. */
  resolveProject(name: string): string | undefined;
  /** Whether these Basic credentials may read `project`. */
  authorize(project: string, username: string, password: string): boolean;
  /** The server's external URL, for the links Git LFS follows. */
  baseUrl(): string;
  logger: Logger;
}

/**
 * Handles one request if it is a git URL (`/{namespace}/{project}.git/…`) and resolves true once the
 * response is complete; resolves false, touching nothing, for any other path. Never rejects.
 */
export type GitHttpHandler = (
  req: IncomingMessage,
  res: ServerResponse,
  pathname: string,
  signal?: AbortSignal,
) => Promise<boolean>;

let backendPath: Promise<string> | undefined;

/** `<git --exec-path>/git-http-backend`, looked up once per process. */
function gitHttpBackend(): Promise<string> {
  backendPath ??= execa('git', ['--exec-path']).then((result) => join(result.stdout.trim(), 'git-http-backend'));
  return backendPath;
}

/** Looks the CGI program up now, off the first fetch's path (`exec` asks while it snapshots); a failure is the first fetch's to report. */
export function warmGitHttpBackend(): void {
  gitHttpBackend().catch(() => undefined);
}

/** Environment variables the CGI program may inherit from ours: enough to run, no GIT_* overrides. */
const INHERITED_ENV = ['PATH', 'HOME', 'LANG', 'LC_ALL', 'TMPDIR', 'SYSTEMROOT'];

function sendText(res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', ...headers }).end(`${text}\n`);
}

/** The `user:password` of a Basic `Authorization` header, or undefined when there is none or it is malformed. */
export function parseBasicAuth(header: string | undefined): { username: string; password: string } | undefined {
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header ?? '');
  if (match === null) return undefined;
  const decoded = Buffer.from(match[1] ?? '', 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon === -1) return undefined;
  return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/** Which git service a request asks for: `info/refs` names it in `?service=`, the POST endpoints in the path. */
function requestedService(endpoint: GitEndpoint, query: URLSearchParams): string | undefined {
  return endpoint === 'info/refs' ? (query.get('service') ?? undefined) : endpoint;
}

/** Creates the handler the reference server mounts before its other routes. */
export function createGitHttpHandler(options: GitHttpHandlerOptions): GitHttpHandler {
  const logger = options.logger.child({ component: 'git-http' });

  return async (req, res, pathname, signal) => {
    const route = routeGitPath(pathname);
    if (route.kind === 'other') return false;
    if (route.kind === 'not-found') {
      sendText(res, 404, 'Not found: this server answers only git smart HTTP requests for /{namespace}/{project}.git');
      return true;
    }
    const repoPath = options.resolveProject(route.project);
    if (repoPath === undefined) {
      sendText(res, 404, `Project ${route.project} not found`);
      return true;
    }
    const credentials = parseBasicAuth(req.headers.authorization);
    if (credentials === undefined || !options.authorize(route.project, credentials.username, credentials.password)) {
      sendText(res, 401, 'HTTP Basic: Access denied', { 'WWW-Authenticate': 'Basic realm="ci-runner"' });
      return true;
    }

    if (route.kind === 'lfs') {
      const { serveLfs } = await import('./lfs.js');
      await serveLfs(req, res, { repoPath, project: route.project, baseUrl: options.baseUrl(), oid: route.oid });
      return true;
    }
    const rawQuery = (req.url ?? '').split('?')[1] ?? '';
    const service = requestedService(route.endpoint, new URLSearchParams(rawQuery));
    if (service === 'git-receive-pack') {
      sendText(res, 403, 'Pushing is not allowed: ci-runner serves repositories read-only');
      return true;
    }
    if (service !== 'git-upload-pack') {
      sendText(res, 403, 'Only git smart HTTP is served (git-upload-pack); the dumb protocol is not supported');
      return true;
    }
    const expectedMethod = route.endpoint === 'info/refs' ? 'GET' : 'POST';
    if (req.method !== expectedMethod) {
      sendText(res, 405, `Use ${expectedMethod} for ${route.endpoint}`, { Allow: expectedMethod });
      return true;
    }

    let program: string;
    try {
      program = await gitHttpBackend();
    } catch (error) {
      backendPath = undefined;
      logger.error({ err: error }, 'cannot find git http-backend');
      sendText(res, 500, 'git is not installed on the server (git http-backend not found)');
      return true;
    }

    // The CGI program dies with the request: client gone, or the server's own signal.
    const disconnect = new AbortController();
    const onClose = (): void => {
      if (!res.writableFinished) disconnect.abort(new Error('client disconnected'));
    };
    res.once('close', onClose);
    try {
      await runCgi({
        program,
        env: cgiEnvironment(req, repoPath, route.endpoint, rawQuery, credentials.username),
        req,
        res,
        signal: signal === undefined ? disconnect.signal : AbortSignal.any([signal, disconnect.signal]),
        logger: logger.child({ project: route.project }),
      });
    } catch (error) {
      // runCgi does not reject by design; this keeps the handler's "never rejects" contract if it ever does.
      logger.error({ err: error, project: route.project }, 'git request failed');
      if (!res.headersSent) sendText(res, 500, 'git request failed; see the server log');
      else res.destroy();
    } finally {
      res.off('close', onClose);
    }
    logger.debug({ project: route.project, endpoint: route.endpoint, status: res.statusCode }, 'git request served');
    return true;
  };
}

/** The RFC 3875 variables plus what `git http-backend` reads (GIT_PROJECT_ROOT, GIT_PROTOCOL, …). */
function cgiEnvironment(
  req: IncomingMessage,
  repoPath: string,
  endpoint: GitEndpoint,
  query: string,
  username: string,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of INHERITED_ENV) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  Object.assign(env, {
    GATEWAY_INTERFACE: 'CGI/1.1',
    SERVER_PROTOCOL: `HTTP/${req.httpVersion}`,
    SERVER_SOFTWARE: 'ci-runner',
    REQUEST_METHOD: req.method ?? 'GET',
    // The project's own path is the root, so PATH_INFO can only name an endpoint inside it.
    GIT_PROJECT_ROOT: repoPath,
    PATH_INFO: `/${endpoint}`,
    QUERY_STRING: query,
    REMOTE_USER: username,
    REMOTE_ADDR: req.socket.remoteAddress ?? '',
    GIT_HTTP_EXPORT_ALL: '1',
  });
  const contentType = req.headers['content-type'];
  if (contentType !== undefined) env.CONTENT_TYPE = contentType;
  // Without CONTENT_LENGTH (a chunked body) git reads the body until end of input.
  const contentLength = req.headers['content-length'];
  if (contentLength !== undefined && /^\d+$/.test(contentLength)) env.CONTENT_LENGTH = contentLength;
  // git clients gzip large requests; http-backend inflates them when told.
  const encoding = req.headers['content-encoding'];
  if (encoding !== undefined) env.HTTP_CONTENT_ENCODING = encoding;
  // Protocol v2 is negotiated through this header (`version=2`).
  const protocol = req.headers['git-protocol'];
  if (typeof protocol === 'string' && /^[A-Za-z0-9=:.,_-]+$/.test(protocol)) env.GIT_PROTOCOL = protocol;
  return env;
}
