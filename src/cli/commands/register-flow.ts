/**
 * What `register` asks the coordinator, per API and per kind of token, and how the entry is written:
 * - a registration token: v4 `POST /api/v4/runners` (settings such as access level, maximum timeout,
 *   paused and a maintenance note go with it) or v1's E1; a config that cannot be written deletes
 *   the new runner again (`--leave-runner` keeps it and prints its token);
 * - a `glrt-` token (a runner created in GitLab, v4 only): `POST /runners/verify` with this host's
 *   system id, which must answer the runner's id (GitLab ≥ 16.0; GitLab Runner requires it too); the
 *   entry records id, token and when it was obtained. The runner stays on the server whatever
 *   happens; a config that cannot be written removes only this host's manager of it;
 * - another runner token: verified, then added as it is.
 */
import { CommandError, EXIT } from '../support.js';
import { appendRunner, type NewRunnerEntry } from '../../agent/config/index.js';
import { loadSystemId } from '../../agent/config/system-id.js';
import { connectRunnerApi, type ApiChoice, type ConcreteClient } from '../../client/connect.js';
import type { TlsMaterial } from '../../client/tls.js';
import { RunnerApiV4Client, type RegisterParams } from '../../client/v4/client.js';
import { checkV4OnlyValues, createdRunnerWarnings, type RegisterValues } from './register-options.js';
import { shortToken } from '../../util/short-token.js';

export interface RegisterRequest {
  values: RegisterValues;
  configPath: string;
  url: string;
  /** The entry to write, its token still empty. */
  entry: NewRunnerEntry;
  tls: TlsMaterial;
  registrationToken?: string;
  runnerToken?: string;
  /** The runner token came as `--registration-token` (GitLab Runner 19 takes a glrt- token there too). */
  runnerTokenViaRegistration?: boolean;
  tagList: string[];
  runUntagged: boolean;
  locked?: boolean;
}

/** Runner tokens of runners created in GitLab (16.0+) start so; only they take the new flow. */
export const CREATED_RUNNER_PREFIX = 'glrt-';

/** Registers (or verifies) at the coordinator and writes the entry; throws CommandError with the exit code. */
export async function registerWithCoordinator(request: RegisterRequest): Promise<void> {
  const { values, url, configPath } = request;
  const created = request.runnerToken?.startsWith(CREATED_RUNNER_PREFIX) === true;
  const systemId = await loadSystemId(configPath);
  if (systemId.unsaved) process.stderr.write(`WARNING: system id: ${systemId.unsaved}\n`);
  const client = await connect(url, (values.api ?? 'auto') as ApiChoice, request.tls, systemId.id);
  try {
    const warnings = created ? createdRunnerWarnings(values, request.runnerTokenViaRegistration) : client.api === 'v1' ? checkV4OnlyValues(values) : [];
    for (const warning of warnings) process.stderr.write(`WARNING: ${warning}\n`);
    if (created) await takeCreatedRunner(client, request, systemId.id);
    else if (request.runnerToken) await takeExistingRunner(client, request, request.runnerToken);
    else await registerNewRunner(client, request);
  } finally {
    await client.close();
  }
}

async function connect(url: string, api: ApiChoice, tls: TlsMaterial, systemId: string): Promise<ConcreteClient> {
  try {
    return await connectRunnerApi({ url, api, tls, systemId });
  } catch (error) {
    if (error instanceof TypeError) throw new CommandError(EXIT.usage, `--url ${url}: ${error.message}`);
    throw new CommandError(EXIT.coordinator, (error as Error).message);
  }
}

/** A registration token: the server creates the runner and gives its token. */
async function registerNewRunner(client: ConcreteClient, request: RegisterRequest): Promise<void> {
  const { values, url, entry } = request;
  const accessLevel = values['access-level'];
  const params: RegisterParams = {
    token: request.registrationToken ?? '',
    description: entry.name,
    tagList: request.tagList,
    runUntagged: request.runUntagged,
    ...(request.locked !== undefined ? { locked: request.locked } : {}),
    ...(accessLevel === 'ref_protected' || accessLevel === 'not_protected' ? { accessLevel } : {}),
    ...(values['maximum-timeout'] ? { maximumTimeout: values['maximum-timeout'] } : {}),
    ...(values.paused !== undefined ? { paused: values.paused } : {}),
    ...(values['maintenance-note'] ? { maintenanceNote: values['maintenance-note'] } : {}),
  };
  const result = await client.registerRunner(params);
  if (!result.runner) {
    if (result.status === 403) throw new CommandError(EXIT.coordinator, `the coordinator refused the registration token (403); check it in the project's or instance's CI settings`);
    if (result.status === 410) {
      throw new CommandError(EXIT.coordinator, `the coordinator no longer takes registration tokens (410); create the runner in GitLab (Settings > CI/CD > Runners > New runner) and register it with --token glrt-...`);
    }
    const detail = result.error ? result.error.message : `status ${result.status}`;
    throw new CommandError(EXIT.coordinator, `registering at ${url} failed: ${detail}`);
  }
  const token = result.runner.token;
  const expiresAt = 'tokenExpiresAt' in result.runner ? result.runner.tokenExpiresAt : undefined;
  await save(request, { ...entry, ...(result.runner.id ? { id: result.runner.id } : {}), token, ...tokenTimes(typeof expiresAt === 'string' ? expiresAt : undefined) }, async () => {
    if (values['leave-runner'] === true) return `the runner stays registered (--leave-runner): add it to a config yourself with url = "${entry.url}" and token = "${token}"`;
    await client.deleteRunner(token).catch(() => undefined);
    return 'the runner was unregistered again';
  });
  process.stdout.write(`Runner "${entry.name}" registered (id ${result.runner.id}, token ${shortToken(token)}..., API ${client.api}) and added to ${request.configPath}\n`);
}

/** A `glrt-` token: verified with this host's system id; the server must say the runner's id. */
async function takeCreatedRunner(client: ConcreteClient, request: RegisterRequest, systemId: string): Promise<void> {
  const { url, entry } = request;
  const token = request.runnerToken ?? '';
  if (!(client instanceof RunnerApiV4Client)) {
    throw new CommandError(EXIT.coordinator, `${url} serves only the v1 runner API, which has no runners created in GitLab (glrt- tokens); register with --registration-token instead`);
  }
  const result = await client.verifyRunner(token);
  if (result.alive === false) throw new CommandError(EXIT.coordinator, `the coordinator at ${url} does not know this runner token (403); copy it again from the runner's page in GitLab`);
  if (result.alive !== true) throw new CommandError(EXIT.coordinator, `verifying the runner token at ${url} failed: ${result.error?.message ?? `status ${result.status}`}`);
  if (!result.runner?.id) {
    throw new CommandError(EXIT.coordinator, `the coordinator at ${url} verified the token but did not say the runner's id (GitLab before 16.0?); a glrt- token needs GitLab 16.0 or later`);
  }
  await save(request, { ...entry, id: result.runner.id, token, ...tokenTimes(result.runner.tokenExpiresAt) }, async () => {
    await client.deleteManager(token, systemId).catch(() => undefined);
    return 'the runner is unchanged on the coordinator';
  });
  process.stdout.write(`Runner "${entry.name}" (id ${result.runner.id}, token ${shortToken(token)}..., system id ${systemId}) verified and added to ${request.configPath}\n`);
}

/** Another runner token: only one the coordinator knows is added. */
async function takeExistingRunner(client: ConcreteClient, request: RegisterRequest, token: string): Promise<void> {
  const { url, entry } = request;
  const result = await client.verifyRunner(token);
  if (result.alive === false) throw new CommandError(EXIT.coordinator, `the coordinator at ${url} does not know this runner token; create the runner there first, or register a new one with --registration-token`);
  if (result.alive !== true) throw new CommandError(EXIT.coordinator, `verifying the runner token at ${url} failed: ${result.error?.message ?? `status ${result.status}`}`);
  await save(request, { ...entry, token }, () => Promise.resolve('the runner is unchanged on the coordinator'));
  process.stdout.write(`Runner "${entry.name}" (token ${shortToken(token)}...) verified and added to ${request.configPath}\n`);
}

/**
 * `token_obtained_at` (now, to the second) and `token_expires_at` as GitLab Runner 19 writes them: a
 * token that does not expire gets its zero value, 0001-01-01T00:00:00Z. The daemon renews a token
 * that expires at 3/4 of that span (agent/token-rotation.ts).
 */
export function tokenTimes(expiresAt: string | undefined, now = Date.now()): { token_obtained_at: Date; token_expires_at: Date } {
  const expires = expiresAt === undefined ? undefined : new Date(expiresAt);
  return {
    token_obtained_at: new Date(Math.floor(now / 1000) * 1000),
    token_expires_at: expires && !Number.isNaN(expires.getTime()) ? expires : new Date('0001-01-01T00:00:00Z'),
  };
}

/** Writes the entry; when that fails, `undo` says (and does) what becomes of the runner on the server. */
async function save(request: RegisterRequest, entry: NewRunnerEntry, undo: () => Promise<string>): Promise<void> {
  try {
    await appendRunner(request.configPath, entry);
  } catch (error) {
    const why = `cannot write ${request.configPath}: ${(error as Error).message}`;
    throw new CommandError(EXIT.usage, `${why}; ${await undo()}`);
  }
}
