/**
 * Crash recovery at daemon start: a job whose final update was still owed when the runner stopped
 * (network down, killed) keeps its state dir (`<project>.tmp/build-<id>`). This finds those dirs
 * under a runner's builds dir and sends what is owed — a job that never finished is reported
 * `failed`, its trace ending with why (the runner stopped while it ran) and when it was recovered —
 * then removes them, so no assigned build is left `running` on the server.
 */
import { readdir, readFile, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { RunnerApi } from '../client/api.js';
import type { Logger } from '../log/index.js';
import { killRecordedCgroup } from '../executors/cgroup/job-cgroup.js';
import { sweepMarked } from '../executors/shell/process-group.js';
import type { RunnerConfig } from './config/schema.js';
import { shortToken } from '../util/short-token.js';
import { legacyTokenDir } from './job/build-dir.js';
import { isKeptLogDir, pruneKeptLogs } from './job/kept-logs.js';
import { CGROUP_FILE, MARKER_FILE } from './job/run-job.js';

const MAX_DEPTH = 8;

/** State dirs of earlier jobs of `runner` (`…/<slot>/<namespace…>/<project>.tmp/build-<id>`). */
export async function findJobStateDirs(runner: Pick<RunnerConfig, 'builds_dir' | 'token'>): Promise<string[]> {
  const found: string[] = [];
  const walk = async (dir: string, depth: number): Promise<void> => {
    if (depth > MAX_DEPTH) return;
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch {
      return;
    }
    const names = new Set(entries.map((entry) => entry.name));
    for (const entry of entries) {
      if (!entry.isDirectory() || entry.name === '.git') continue;
      // A checkout (it has its `.tmp` beside it) is the job's: what a job wrote there is no state dir.
      if (names.has(`${entry.name}.tmp`)) continue;
      const path = join(dir, entry.name);
      if (dir.endsWith('.tmp') && /^build-\d+$/.test(entry.name)) found.push(path);
      else if (!dir.endsWith('.tmp')) await walk(path, depth + 1);
    }
  };
  await walk(join(runner.builds_dir, shortToken(runner.token)), 0);
  // Dirs of jobs a version before the short token left (the token's first 8 characters).
  if (legacyTokenDir(runner.token) !== shortToken(runner.token)) await walk(join(runner.builds_dir, legacyTokenDir(runner.token)), 0);
  return found;
}

/**
 * Sends the owed final updates in `dirs` (from {@link findJobStateDirs}, taken before this runner
 * starts any job, so a running job's dir is never among them). Never rejects.
 */
export async function recoverDeliveries(dirs: string[], runner: RunnerConfig, client: RunnerApi, signal: AbortSignal, logger: Logger): Promise<void> {
  if (dirs.length === 0) return;
  const { resumeDelivery, SPOOL_FILE } = await import('../trace/index.js');
  for (const dir of dirs) {
    try {
      // The full log of a job cut by the output limit, kept on purpose: nothing is owed for it.
      if (await isKeptLogDir(dir, SPOOL_FILE)) {
        await pruneKeptLogs(dirname(dir), SPOOL_FILE);
        continue;
      }
      // Processes of a job whose daemon died are still running; they go first: its cgroup (which
      // holds even those that called setsid and dropped the marker), then anything marked.
      const cgroup = (await readFile(join(dir, CGROUP_FILE), 'utf8').catch(() => '')).trim();
      // Never in the way of the report: the start-up sweep of dead daemons' cgroups may be removing
      // the same cgroup at this moment, and a failed kill must not leave the job running on the server.
      const inCgroup = cgroup
        ? await killRecordedCgroup(cgroup).catch((error: unknown) => {
            logger.warn({ err: error, dir, cgroup }, 'could not empty the cgroup of a job from an earlier run');
            return 0;
          })
        : 0;
      if (inCgroup > 0) logger.info({ dir, cgroup, killed: inCgroup }, 'killed processes left in the cgroup of a job from an earlier run');
      const marker = (await readFile(join(dir, MARKER_FILE), 'utf8').catch(() => '')).trim();
      const marked = /^[0-9a-f]{8,}$/.test(marker)
        ? await sweepMarked(marker).catch((error: unknown) => {
            logger.warn({ err: error, dir }, 'could not look for processes left by a job from an earlier run');
            return 0;
          })
        : 0;
      if (marked > 0) logger.info({ dir, killed: marked }, 'killed processes left by a job from an earlier run');
      const killed = inCgroup + marked;
      // A job that never finished gets lines in its trace saying the runner died and when it was recovered.
      const detail = killed > 0 ? `killed ${killed} process${killed === 1 ? '' : 'es'} the job left behind` : undefined;
      const buildId = Number(basename(dir).slice('build-'.length));
      const result = await resumeDelivery(dir, client, runner.token, signal, { buildId, unfinishedState: 'failed', logger, ...(detail ? { unfinishedDetail: detail } : {}) });
      if (result) logger.info({ dir, delivered: result.delivered, status: result.status }, 'sent the final update of a job from an earlier run');
      if (!result || result.delivered || result.refused) await rm(dir, { recursive: true, force: true });
    } catch (error) {
      if (signal.aborted) return;
      logger.warn({ err: error, dir }, 'could not recover an earlier job\'s final update');
    }
  }
}

/** How long the start-up sweep of an executor's leftovers may take (an engine that hangs must not hold the entry). */
const LEFTOVER_SWEEP_TIMEOUT_MS = 60_000;

/**
 * Removes what the entry's executor left from an earlier process (docker: its labelled containers and
 * networks; kubernetes: its labelled pods and secrets). Never rejects: a failure is logged and the
 * entry goes on.
 */
export async function removeExecutorLeftovers(runner: RunnerConfig, logger: Logger): Promise<void> {
  if (runner.executor === 'kubernetes') return removeKubernetesLeftovers(runner, logger);
  if (runner.executor !== 'docker') return;
  try {
    const [{ removeDockerLeftovers }, { dockerOptionsOf }] = await Promise.all([import('../executors/docker/leftovers.js'), import('../executors/docker/defaults.js')]);
    const removed = await removeDockerLeftovers(dockerOptionsOf(runner), runner.token, AbortSignal.timeout(LEFTOVER_SWEEP_TIMEOUT_MS));
    if (removed.containers + removed.networks + removed.volumes > 0) logger.info({ runner: runner.name, ...removed }, 'removed containers, networks and volumes left by an earlier run');
  } catch (error) {
    logger.warn({ err: error, runner: runner.name }, 'could not remove containers and networks left by an earlier run');
  }
}

/**
 * The kubernetes executor's labelled pods and secrets from an earlier process, in its namespace and
 * those its jobs used (leftovers.ts says which).
 */
async function removeKubernetesLeftovers(runner: RunnerConfig, logger: Logger): Promise<void> {
  try {
    const [{ removeKubernetesLeftovers: remove }, { currentOwner }, { NamespaceRecord, namespaceRecordFile }] = await Promise.all([
      import('../executors/kubernetes/leftovers.js'),
      import('../executors/kubernetes/labels.js'),
      import('../executors/kubernetes/namespace-record.js'),
    ]);
    const record = new NamespaceRecord(namespaceRecordFile(runner.builds_dir, runner.token));
    const { failed, ...removed } = await remove(runner.kubernetes, runner.token, AbortSignal.timeout(LEFTOVER_SWEEP_TIMEOUT_MS), currentOwner(), record);
    if (failed.length > 0) logger.warn({ runner: runner.name, failed }, 'could not look for what an earlier run left in namespaces its jobs used; trying again at the next start');
    if (removed.pods + removed.secrets + removed.namespaces > 0) logger.info({ runner: runner.name, namespace: runner.kubernetes.namespace, ...removed }, 'removed pods, secrets and job namespaces left by an earlier run');
  } catch (error) {
    logger.warn({ err: error, runner: runner.name }, 'could not remove pods and secrets left by an earlier run');
  }
}
