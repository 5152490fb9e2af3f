/**
 * `ci-runner serve`: runs the embedded reference CI server (docs/architecture.md) until SIGINT/SIGTERM. Prints
 * one block with the URL, tokens and projects on standard output; request logs go to standard error.
 */
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { ArgumentsCamelCase, Argv, CommandModule } from 'yargs';
import { CiRunnerError } from '../../util/errors.js';
import { createLogger } from '../../log/index.js';
import { parseDurationMs } from '../../util/duration.js';
import { createReferenceServer, parseFaultFlag, type FaultRule, type PipelineView, type ReferenceServer, type ServerTls } from '../../server/index.js';
import { parseByteSize } from '../../server/sizes.js';
import { readTlsMaterial } from '../../client/tls.js';
import { requestedLogLevel } from '../global-options.js';

interface ServeArgs {
  host: string;
  port: number;
  registrationToken?: string;
  adminToken?: string;
  project: string[];
  pipeline?: string;
  ref: string;
  dataDir?: string;
  maxArtifactsSize: string;
  longPoll: string;
  runnerTokenExpiresIn: string;
  traceUpdateInterval: string;
  staleBuildTimeout: string;
  stuckTimeout: string;
  fault: string[];
  faultSeed?: number;
  tlsCert?: string;
  tlsKey?: string;
  tlsClientCa?: string;
}

class UsageError extends CiRunnerError {
  readonly exitCode = 2;

  constructor(message: string) {
    super('USAGE', message);
  }
}

function parseProject(text: string): { name: string; path: string } {
  const at = text.indexOf('=');
  if (at <= 0 || at === text.length - 1) throw new UsageError(`--project "${text}" must be NAME=PATH, e.g. --project acme/app=./app`);
  return { name: text.slice(0, at), path: resolve(text.slice(at + 1)) };
}

function durationFlag(name: string, text: string): number {
  const ms = parseDurationMs(text);
  if (ms === undefined) throw new UsageError(`--${name} "${text}" is not a duration; try 30s, 5m, 1h or 1500ms`);
  return ms;
}

/** --trace-update-interval: a duration of whole seconds, at least one (the header carries seconds). */
function updateIntervalFlag(text: string): number {
  const ms = durationFlag('trace-update-interval', text);
  if (ms < 1000 || ms % 1000 !== 0) throw new UsageError(`--trace-update-interval "${text}" must be whole seconds, at least 1s (the runner is told seconds)`);
  return ms / 1000;
}

/** The https settings from --tls-*, read and checked (exit 2 naming the flag and file otherwise). */
function serverTls(args: Pick<ServeArgs, 'tlsCert' | 'tlsKey' | 'tlsClientCa'>): ServerTls | undefined {
  if (args.tlsClientCa && !args.tlsCert) throw new UsageError('--tls-client-ca needs --tls-cert and --tls-key: client certificates are asked for over https');
  if (!args.tlsCert && !args.tlsKey) return undefined;
  const material = readTlsMaterial(
    { 'tls-cert-file': args.tlsCert, 'tls-key-file': args.tlsKey, 'tls-ca-file': args.tlsClientCa },
    { 'tls-cert-file': '--tls-cert', 'tls-key-file': '--tls-key', 'tls-ca-file': '--tls-client-ca' },
  );
  if (!material.cert || !material.key) return undefined;
  return { cert: material.cert, key: material.key, ...(material.ca ? { clientCa: material.ca } : {}) };
}

function builder(yargs: Argv): Argv<ServeArgs> {
  return yargs
    .option('host', { type: 'string', default: '127.0.0.1', describe: 'Address to listen on' })
    .option('port', { type: 'number', default: 8080, describe: 'Port to listen on (0 = any free port)' })
    .option('registration-token', { type: 'string', describe: 'Token runners register with (generated when absent)' })
    .option('admin-token', { type: 'string', describe: 'PRIVATE-TOKEN for /admin/api (generated when absent)' })
    .option('project', { type: 'string', array: true, default: [], describe: 'NAME=PATH: serve the git repository at PATH as NAME (namespace/project); repeatable' })
    .option('pipeline', { type: 'string', describe: 'A .gitlab-ci.yml file to queue at start on the first project' })
    .option('ref', { type: 'string', default: 'main', describe: 'Branch, tag or sha for --pipeline' })
    .option('data-dir', {
      type: 'string',
      describe: 'Keep runners, pipelines, builds, traces and artifacts here, across restarts (absent: in memory, files in a temp dir removed at exit)',
    })
    .option('max-artifacts-size', { type: 'string', default: '100MiB', describe: 'Uploads of this size or more get 413 (bytes, or 100MB / 100MiB)' })
    .option('long-poll', { type: 'string', default: '0', describe: 'Hold a build request with nothing to do for up to this long (e.g. 30s); 0 = off' })
    .option('runner-token-expires-in', { type: 'string', default: '0', describe: 'Runner tokens (v4) expire this long after they are issued (e.g. 7d), as GitLab\'s token expiry: answers carry token_expires_at, an expired token gets 403, reset_authentication_token gives a new one; 0 = never' })
    .option('trace-update-interval', { type: 'string', default: '1s', describe: 'How often runners are told to send their log and keep-alives while a job runs (X-GitLab-Trace-Update-Interval, whole seconds): how soon a silent job hears of its cancel' })
    .option('stale-build-timeout', { type: 'string', default: '60m', describe: 'Fail running builds that send no update for this long' })
    .option('stuck-timeout', { type: 'string', default: '60m', describe: 'Fail pending jobs that no runner can take (their tags, untagged, their project) after this long' })
    .option('fault', {
      type: 'string',
      array: true,
      default: [],
      describe:
        'Inject faults: ENDPOINT:ACTION[:OPTION][:OPTION], repeatable (OPTION: PERCENT%, a STATUS for error, MS for delay). ENDPOINT: register_runner, delete_runner, request_build, update_build, patch_trace, upload_artifacts, download_artifacts, delete_artifacts, verify_runner, reset_runner_token, delete_runner_manager (API v1 and v4 alike), git or *. ACTION: error (500, or e.g. error:429 with Retry-After), delay (1 s, or ENDPOINT:delay:MS), hang, apply_then_error (process, then 500), close (cut the response)',
    })
    .option('fault-seed', { type: 'number', describe: 'Seed for fault percentages (repeatable runs)' })
    .option('tls-cert', { type: 'string', describe: 'Serve https with this PEM certificate (chain); needs --tls-key', group: 'TLS:' })
    .option('tls-key', { type: 'string', describe: 'PEM private key of --tls-cert (unencrypted)', group: 'TLS:' })
    .option('tls-client-ca', { type: 'string', describe: 'Require a client certificate issued by this PEM CA (mutual TLS); needs --tls-cert', group: 'TLS:' })
    .example('$0 serve --project acme/app=./app --pipeline ./app/.gitlab-ci.yml', 'Serve one project and queue its pipeline')
    .example('$0 serve --tls-cert server.crt --tls-key server.key --tls-client-ca ca.crt', 'https, and only for clients with a certificate from ca.crt')
    .example('$0 serve --port 0 --long-poll 30s --fault patch_trace:apply_then_error:10%', 'A flaky server for testing a runner') as unknown as Argv<ServeArgs>;
}

function banner(server: ReferenceServer, projects: Array<{ name: string; path: string }>, pipeline: PipelineView | undefined, ownDataDir: boolean, tls: ServerTls | undefined): string {
  const lines = [
    'ci-runner reference server is ready',
    `  URL:                ${server.url}`,
    `  Web page:           ${server.url}/   (sign in with the admin token)`,
    `  Registration token: ${server.registrationToken}`,
    `  Admin token:        ${server.adminToken}   (header PRIVATE-TOKEN for ${server.url}/admin/api)`,
    `  Data dir:           ${server.dataDir}${ownDataDir ? ' (temporary)' : ''}`,
  ];
  if (projects.length === 0) lines.push('  Projects:           none (add with --project NAME=PATH)');
  else {
    lines.push('  Projects:');
    for (const project of projects) lines.push(`    ${project.name}  ${server.url}/${project.name}.git  (${project.path})`);
  }
  if (tls) lines.push(`  TLS:                https${tls.clientCa ? ', client certificates required' : ''}`);
  if (pipeline) lines.push(`  Pipeline:           #${pipeline.id} queued with ${pipeline.jobs.length} job(s): ${pipeline.jobs.map((j) => j.name).join(', ')}`);
  lines.push(`  Runners register at ${server.url} (API v4, or /ci/api/v1) with the registration token above,`);
  lines.push(`  or take a glrt- token from "New runner" on ${server.url}/runners (register --token glrt-…).`);
  return `${lines.join('\n')}\n`;
}

async function handler(args: ArgumentsCamelCase<ServeArgs>): Promise<void> {
  const projects = args.project.map(parseProject);
  const maxArtifactsSize = parseByteSize(args.maxArtifactsSize);
  if (maxArtifactsSize === undefined) throw new UsageError(`--max-artifacts-size "${args.maxArtifactsSize}" is not a size; try 100MB or 104857600`);
  let faults: FaultRule[];
  try {
    faults = args.fault.map(parseFaultFlag);
  } catch (error) {
    throw new UsageError(`--fault: ${(error as Error).message}`);
  }
  const tls = serverTls(args);
  const pipelineText = args.pipeline === undefined ? undefined : await readFile(args.pipeline, 'utf8');
  if (pipelineText !== undefined && projects.length === 0) throw new UsageError('--pipeline needs a project to run on: add --project NAME=PATH');
  const dataDir = args.dataDir === undefined ? undefined : resolve(args.dataDir);

  // The global --log-level/--debug (default info): request and event logs on standard error.
  const logger = createLogger({ level: requestedLogLevel(args) ?? 'info' });
  const server = await createReferenceServer({
    host: args.host,
    port: args.port,
    ...(args.registrationToken ? { registrationToken: args.registrationToken } : {}),
    ...(args.adminToken ? { adminToken: args.adminToken } : {}),
    ...(dataDir ? { dataDir } : {}),
    maxArtifactsSize,
    longPollMs: durationFlag('long-poll', args.longPoll),
    runnerTokenExpiresInMs: durationFlag('runner-token-expires-in', args.runnerTokenExpiresIn),
    traceUpdateIntervalS: updateIntervalFlag(args.traceUpdateInterval),
    staleBuildTimeoutMs: durationFlag('stale-build-timeout', args.staleBuildTimeout),
    stuckPendingTimeoutMs: durationFlag('stuck-timeout', args.stuckTimeout),
    projects,
    faults,
    ...(args.faultSeed !== undefined ? { faultSeed: args.faultSeed } : {}),
    logger,
    ...(tls ? { tls } : {}),
  });
  let pipeline: PipelineView | undefined;
  try {
    if (pipelineText !== undefined && projects[0]) {
      pipeline = await server.createPipeline({ project: projects[0].name, ref: args.ref, config: pipelineText });
    }
  } catch (error) {
    await server.close();
    throw new UsageError(`--pipeline ${args.pipeline}: ${(error as Error).message}`);
  }
  process.stdout.write(banner(server, projects, pipeline, dataDir === undefined, tls));

  await new Promise<void>((resolveStop) => {
    const stop = (signal: NodeJS.Signals): void => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      logger.info({ signal }, 'shutting down');
      process.exitCode = signal === 'SIGINT' ? 130 : 143;
      void server.close().finally(resolveStop);
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}

export const serveCommand: CommandModule<object, ServeArgs> = {
  command: 'serve',
  describe: 'Run the embedded reference CI server (runner API /api/v4 and /ci/api/v1, admin API, git over HTTP, web page)',
  builder,
  handler,
};
