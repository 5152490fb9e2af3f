/**
 * The embedded reference CI server: the runner API `/ci/api/v1` (docs/protocol-v1.md §4), an admin API,
 * pipelines from `.gitlab-ci.yml` text and projects served over git smart HTTP. One process, state
 * in memory, traces and artifacts on disk under `dataDir`. Given a `dataDir`, the state is durable
 * too (`state/durable.ts`): runners, pipelines and builds survive a restart; without one, a temp
 * dir holds the files and nothing is journaled.
 */
import { setMaxListeners } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type RequestListener, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CiRunnerError } from '../util/errors.js';
import { silentLogger } from '../log/index.js';
import type { ServerContext, ServerSettings } from './context.js';
import { FaultRegistry } from './faults.js';
import type { GitHttpHandlerOptions } from './git/http-backend.js';
import { ByteBudget } from './http/byte-budget.js';
import { createDispatcher, type GitHandler } from './dispatch.js';
import { ServerStatus } from './status.js';
import { createPipeline, loadPipelineModules, planPipeline, type CreatePipelineRequest, type PipelinePreview } from './state/create-pipeline.js';

/** `planPipeline`'s answer: the ref as resolved, and the plan (`plan.outcomes`: every job and why it runs or not). */
export type PipelinePlanResult = Omit<PipelinePreview, 'project'>;
export type { CreatePipelineRequest } from './state/create-pipeline.js';
export type { JobOutcome, PipelinePlan, PlannedJob } from '../pipeline/select.js';
export { plannedJobs } from '../pipeline/select.js';
import { ArtifactStore } from './state/artifacts.js';
import { createBridgeRunner } from './state/bridges.js';
import { buildFilesIn, DurableState } from './state/durable.js';
import { Scheduler } from './state/scheduler.js';
import { playBuild, retryBuild } from './state/play-retry.js';
import { startStaleSweeper } from './state/stale.js';
import { failStuck, unrunnableBuilds } from './state/stuck.js';
import { Store } from './state/store.js';
import { TraceStore } from './state/traces.js';
import { advancePipeline, cancelBuild, shownStatus } from './state/transitions.js';
import { randomToken } from './tokens.js';
import type { FaultRule, JobView, PipelineView, ReferenceServerOptions, ServerTls } from './types.js';
import { ChangeHub } from './ui/events.js';
import type { UiHandler } from './ui/routes.js';
import { jobView, pipelineView } from './views.js';

export type { FaultAction, FaultEndpoint, FaultRule, JobView, PipelineView, ReferenceServerOptions, ServerTls } from './types.js';
export { parseFaultFlag } from './faults.js';

export interface ReferenceServer {
  /** 'http://127.0.0.1:PORT' (https with `tls`) — what a runner puts in `url`. */
  readonly url: string;
  readonly registrationToken: string;
  readonly adminToken: string;
  readonly dataDir: string;
  readonly faults: { add(rule: FaultRule): number; remove(id: number): void; clear(): void };
  addProject(name: string, path: string): void;
  /**
   * Same as POST /admin/api/pipelines; throws CiRunnerError code 'PIPELINE_INVALID' on a bad config
   * (`PipelineConfigError`, every problem in `problems`) and 'PIPELINE_FILTERED' when rules leave nothing to run.
   */
  createPipeline(req: CreatePipelineRequest): Promise<PipelineView>;
  /** What `createPipeline` would create, without creating it: every job with its rule outcome (`exec --list`). */
  planPipeline(req: CreatePipelineRequest): Promise<PipelinePlanResult>;
  getPipeline(id: number): PipelineView | undefined;
  getJob(id: number): JobView | undefined;
  /** In-process callers (`exec`): where a job's report of `type` is stored, and whether it is gzipped. */
  reportFile(id: number, type: string): { path: string; gzipped: boolean } | undefined;
  listJobs(status?: string): JobView[];
  /**
   * Same as POST /admin/api/jobs/:id/cancel: a job whose runner cancels gracefully becomes `canceling`
   * (its after_script runs) unless `force`; canceling it again forces it.
   */
  cancelJob(id: number, options?: { force?: boolean }): JobView | undefined;
  /** Same as POST /admin/api/jobs/:id/play; throws CiRunnerError 'JOB_NOT_PLAYABLE' when it is not manual or delayed. */
  playJob(id: number): JobView | undefined;
  /** Same as POST /admin/api/jobs/:id/retry: the new job; throws CiRunnerError 'JOB_NOT_RETRYABLE' when it is not finished. */
  retryJob(id: number): JobView | undefined;
  /** Bytes exactly as stored. */
  getTrace(id: number): Promise<Buffer>;
  /**
   * Gives the runner of `token` these tags, as an admin editing it in GitLab would; pending jobs it
   * can now take are offered to it at once. Throws CiRunnerError 'RUNNER_NOT_FOUND'.
   */
  setRunnerTags(token: string, tags: readonly string[]): void;
  /** Pending jobs that no active runner can take right now (tags, untagged, project), each with why. */
  unrunnableJobs(): Array<{ job: JobView; pipelineId: number; tags: string[]; reason: string }>;
  /** Fails a pending job that no runner can take, its log saying `reason` (what the stuck-job sweep does after its timeout). */
  failStuckJob(id: number, reason: string): Promise<void>;
  /** Calls `listener` after each change of runners, pipelines or jobs (several of one turn at once) until the returned function is called. */
  onChange(listener: () => void): () => void;
  close(): Promise<void>;
}

const DEFAULT_MAX_ARTIFACTS = 100 * 1024 * 1024;
/**
 * GitLab says 3 s while somebody watches the log and 30–60 s otherwise; this server's runners are
 * usually watched (exec, demo, tests) and a short interval is what lets a silent job hear of its
 * cancel within a second.
 */
const DEFAULT_TRACE_UPDATE_INTERVAL_S = 1;
/** Two whole-trace PUTs at their cap (64 MiB) at once; more wait their turn. */
const DEFAULT_BODY_MEMORY = 128 * 1024 * 1024;
/** 128 concurrent pre-auth windows (64 KiB each). */
const PRE_AUTH_POOL = 8 * 1024 * 1024;

function validateProjectName(name: string): void {
  if (!/^[A-Za-z0-9_.-]+(\/[A-Za-z0-9_.-]+)+$/.test(name) || name.endsWith('.git')) {
    throw new CiRunnerError('PROJECT_INVALID', `project name "${name}" must look like namespace/project (letters, digits, . _ -)`);
  }
}

/**
 * The http or https server. With a client CA, a connection without a certificate from it is refused
 * during the handshake, before any request (git's included) is read.
 */
function listener(handle: RequestListener, tls: ServerTls | undefined): Server {
  if (!tls) return createServer(handle);
  const mutual = tls.clientCa !== undefined;
  // https.Server is an http.Server in all the ways used here (listen, close, keep-alive, address).
  return createHttpsServer({ cert: tls.cert, key: tls.key, ...(mutual ? { ca: tls.clientCa, requestCert: true, rejectUnauthorized: true } : {}) }, handle) as unknown as Server;
}

/**
 * Loads what the server loads on first use to create a pipeline and serve its git repository, for a
 * caller that knows both are coming (`exec`) and has other work to overlap them with.
 */
export async function preloadPipelineModules(): Promise<void> {
  await Promise.all([loadPipelineModules(), import('./git/http-backend.js').then((backend) => backend.warmGitHttpBackend())]);
}

/** Starts a reference server; it is listening when the promise resolves. */
export async function createReferenceServer(options: ReferenceServerOptions = {}): Promise<ReferenceServer> {
  const logger = (options.logger ?? silentLogger()).child({ component: 'server' });
  const ownsDataDir = options.dataDir === undefined;
  const dataDir = options.dataDir ?? (await mkdtemp(join(tmpdir(), 'ci-runner-server-')));
  const store = new Store();
  const artifacts = new ArtifactStore(dataDir, store);
  const durable = ownsDataDir ? undefined : DurableState.open(dataDir, store, buildFilesIn(dataDir, (id) => artifacts.archivePath(id)), logger);
  const settings: ServerSettings = Object.freeze({
    registrationToken: options.registrationToken ?? durable?.settings?.registrationToken ?? randomToken(20),
    adminToken: options.adminToken ?? durable?.settings?.adminToken ?? randomToken(20),
    maxArtifactsSize: options.maxArtifactsSize ?? DEFAULT_MAX_ARTIFACTS,
    longPollMs: options.longPollMs ?? 0,
    runnerTokenExpiresInMs: options.runnerTokenExpiresInMs ?? 0,
    staleBuildTimeoutMs: options.staleBuildTimeoutMs ?? 60 * 60 * 1000,
    stuckPendingTimeoutMs: options.stuckPendingTimeoutMs ?? 60 * 60 * 1000,
    defaultJobTimeout: options.defaultJobTimeout ?? 3600,
    traceUpdateIntervalS: Math.max(1, Math.round(options.traceUpdateIntervalS ?? DEFAULT_TRACE_UPDATE_INTERVAL_S)),
  });
  durable?.saveSettings({ registrationToken: settings.registrationToken, adminToken: settings.adminToken });
  // The web page hears of every recorded change (ui/events.ts).
  const changes = new ChangeHub();
  store.sink = changes.wrap(durable);
  const closer = new AbortController();
  // Every in-flight request listens on this signal; many at once is normal, not a leak.
  setMaxListeners(0, closer.signal);
  let baseUrl = '';
  const ctx: ServerContext = {
    store,
    scheduler: new Scheduler(store),
    traces: new TraceStore(join(dataDir, 'traces')),
    artifacts,
    faults: new FaultRegistry(options.faults, options.faultSeed),
    bodies: { main: new ByteBudget(options.requestBodyMemory ?? DEFAULT_BODY_MEMORY), preAuth: new ByteBudget(PRE_AUTH_POOL) },
    settings,
    logger,
    dataDir,
    closing: closer.signal,
    baseUrl: () => baseUrl,
  };
  ctx.bridges = createBridgeRunner(ctx);
  const addProject = (name: string, path: string): void => {
    validateProjectName(name);
    store.addProject(name, path);
  };
  for (const project of options.projects ?? []) addProject(project.name, project.path);
  // Loaded pipelines move on if a crash came between a build finishing and its successors being
  // recorded (stage processing only depends on the builds' states, so this is a no-op otherwise).
  for (const pipeline of store.pipelines.values()) advancePipeline(ctx, pipeline.id);

  const gitOptions: GitHttpHandlerOptions = {
    resolveProject: (name) => store.projectByName(name)?.path,
    // A running job's token reads every project on this server, so submodules living in another
    // project clone with the job's credentials (GitLab lets it when that project's job token allowlist
    // names the job's; this server keeps no allowlist, so its projects read each other: docs/server.md).
    // Read-only either way: the handler refuses receive-pack before asking. Any other token reads nothing.
    authorize: (_project, username, password) => username === 'gitlab-ci-token' && store.runningBuildByToken(password) !== undefined,
    logger: logger.child({ component: 'git' }),
    baseUrl: () => ctx.baseUrl(),
  };
  // Loaded on the first git request: the git side pulls in execa, which would otherwise cost
  // `ci-runner serve` a noticeable part of its start-up time.
  let gitHandler: Promise<GitHandler> | undefined;
  const git: GitHandler = async (req, res, pathname, signal) => {
    gitHandler ??= import('./git/http-backend.js').then(({ createGitHttpHandler }) => createGitHttpHandler(gitOptions));
    return (await gitHandler)(req, res, pathname, signal);
  };
  // The web page is loaded on its first request too: its modules cost `exec` (which never shows it)
  // and `serve` some 70 ms at every start.
  let uiHandler: Promise<UiHandler> | undefined;
  const ui: UiHandler = async (req, res, url, signal) => {
    uiHandler ??= import('./ui/routes.js').then(({ createUiHandler }) => createUiHandler(ctx, changes));
    return (await uiHandler)(req, res, url, signal);
  };
  const server = listener(createDispatcher(ctx, git, new ServerStatus(ctx), ui), options.tls);
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    const fail = (error: Error): void => {
      durable?.close(); // let the next attempt have the data dir
      reject(error);
    };
    server.once('error', fail);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      server.off('error', fail);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.address === '0.0.0.0' || address.address === '::' ? '127.0.0.1' : address.address.includes(':') ? `[${address.address}]` : address.address;
  baseUrl = `${options.tls ? 'https' : 'http'}://${host}:${address.port}`;
  const stopSweeper = startStaleSweeper(ctx);
  logger.info({ url: baseUrl, dataDir }, 'reference server listening');

  let closed: Promise<void> | undefined;
  return {
    url: baseUrl,
    registrationToken: settings.registrationToken,
    adminToken: settings.adminToken,
    dataDir,
    faults: {
      add: (rule) => ctx.faults.add(rule),
      remove: (id) => ctx.faults.remove(id),
      clear: () => ctx.faults.clear(),
    },
    addProject,
    createPipeline: async (req) => pipelineView(ctx, await createPipeline(ctx, req)),
    planPipeline: async (req) => {
      const { project: _project, ...preview } = await planPipeline(ctx, req);
      return preview;
    },
    getPipeline: (id) => {
      const pipeline = store.pipelines.get(id);
      return pipeline ? pipelineView(ctx, pipeline) : undefined;
    },
    getJob: (id) => {
      const build = store.buildById(id);
      return build ? jobView(build) : undefined;
    },
    reportFile: (id, type) => {
      const report = store.buildById(id)?.reports?.find((entry) => entry.type === type);
      return report ? { path: ctx.artifacts.reportPath(id, type), gzipped: report.format === 'gzip' } : undefined;
    },
    listJobs: (status) => [...store.builds.values()].filter((b) => !status || shownStatus(b) === status).map(jobView),
    cancelJob: (id, cancelOptions) => {
      const build = store.buildById(id);
      if (!build) return undefined;
      cancelBuild(ctx, build, cancelOptions);
      return jobView(build);
    },
    playJob: (id) => {
      const build = store.buildById(id);
      return build ? jobView(playBuild(ctx, build)) : undefined;
    },
    retryJob: (id) => {
      const build = store.buildById(id);
      return build ? jobView(retryBuild(ctx, build)) : undefined;
    },
    getTrace: (id) => ctx.traces.read(id),
    setRunnerTags: (token, tags) => {
      const runner = store.runnerByToken(token);
      if (!runner) throw new CiRunnerError('RUNNER_NOT_FOUND', 'no runner has this token');
      runner.tags = [...new Set(tags)];
      store.saveRunner(runner);
      ctx.scheduler.buildsQueued();
    },
    unrunnableJobs: () => unrunnableBuilds(ctx).map(({ build, reason }) => ({ job: jobView(build), pipelineId: build.pipelineId, tags: [...build.job.tags], reason })),
    failStuckJob: async (id, reason) => {
      const build = store.buildById(id);
      if (build) await failStuck(ctx, build, reason);
    },
    onChange: (listener) => changes.listen(listener),
    close: () => {
      closed ??= (async () => {
        stopSweeper();
        closer.abort();
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        });
        durable?.close();
        if (ownsDataDir) await rm(dataDir, { recursive: true, force: true });
        logger.info('reference server closed');
      })();
      return closed;
    },
  };
}
