/**
 * Where `exec` keeps what outlives a run, outside the working tree: per project (by the path of its
 * working tree) a state dir under `$XDG_STATE_HOME/ci-runner/exec` (default `~/.local/state`), with
 * the runner's cache (shared by runs, as a runner's `cache_dir` is) and one dir per run holding each
 * job's log and artifacts archive. Only the newest `KEPT_RUNS` runs are kept, so the dir cannot grow
 * without bound.
 */
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { createGunzip } from 'node:zlib';
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { basename, join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { CiRunnerError } from '../util/errors.js';
import type { ReferenceServer } from '../server/index.js';

export const KEPT_RUNS = 10;

export interface StateDirs {
  /** The project's state dir. */
  root: string;
  /** The runner's cache_dir, kept across runs. */
  cache: string;
}

/** A name safe as one path segment: no separators, no leading dot, nothing invisible. */
export function fileSafe(name: string): string {
  const safe = name.replace(/[/\\:*?"<>|\u0000-\u001f\u007f]/g, '_').replace(/^\.+/, '_').trim();
  return safe === '' ? '_' : safe;
}

/** The project's state dir (not created here: the runner creates its cache dir when a job uses it). */
export function projectStateDirs(topLevel: string, env: NodeJS.ProcessEnv = process.env): StateDirs {
  const base = env.XDG_STATE_HOME && env.XDG_STATE_HOME.startsWith('/') ? env.XDG_STATE_HOME : join(homedir(), '.local', 'state');
  const hash = createHash('sha256').update(topLevel).digest('hex').slice(0, 10);
  const root = join(base, 'ci-runner', 'exec', `${fileSafe(basename(topLevel))}-${hash}`);
  return { root, cache: join(root, 'cache') };
}

/** A new dir for this run's logs and artifacts under `root/runs`, with old runs beyond the limit removed. */
export async function newRunDir(root: string): Promise<string> {
  const runs = join(root, 'runs');
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
  let run = join(runs, stamp);
  try {
    await mkdir(runs, { recursive: true });
    await pruneRuns(runs, KEPT_RUNS - 1);
    for (let n = 2; ; n += 1) {
      try {
        await mkdir(run);
        return run;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || n > 100) throw error;
        run = join(runs, `${stamp}-${n}`);
      }
    }
  } catch (error) {
    throw new CiRunnerError('EXEC_STATE_DIR', `cannot create a run dir under ${runs} (${(error as Error).message}); set XDG_STATE_HOME to a writable dir`, { cause: error });
  }
}

/** Removes the oldest run dirs until `keep` are left (names sort by time). */
async function pruneRuns(runs: string, keep: number): Promise<void> {
  const names = (await readdir(runs)).sort();
  for (const name of names.slice(0, Math.max(0, names.length - keep))) await rm(join(runs, name), { recursive: true, force: true });
}

export interface KeptJob {
  id: number;
  name: string;
  log: string;
  artifacts?: string;
  /** Why the job's artifacts could not be kept (the run goes on; the summary says so). */
  artifactsError?: string;
}

/**
 * Copies each job's log (as stored by the server) and artifacts archive (over the admin API, as any
 * client would fetch it) into the run dir: `logs/<id>-<job>.log`, `artifacts/<id>-<job>/<filename>`.
 * An archive that cannot be fetched whole is not kept (no partial file): the job's entry says why,
 * and the other jobs' files are kept all the same.
 */
export async function keepJobFiles(server: KeepSource, jobIds: readonly number[], runDir: string, signal: AbortSignal): Promise<KeptJob[]> {
  await mkdir(join(runDir, 'logs'), { recursive: true });
  const kept: KeptJob[] = [];
  for (const id of jobIds) {
    const job = server.getJob(id);
    if (!job) continue;
    const stem = `${id}-${fileSafe(job.name)}`;
    const log = join(runDir, 'logs', `${stem}.log`);
    await writeFile(log, await server.getTrace(id));
    const entry: KeptJob = { id, name: job.name, log };
    if (job.artifacts) {
      const dir = join(runDir, 'artifacts', stem);
      await mkdir(dir, { recursive: true });
      const file = join(dir, fileSafe(job.artifacts.filename));
      try {
        await downloadArtifacts(server, id, file, signal);
        entry.artifacts = file;
      } catch (error) {
        if (signal.aborted) throw error;
        await rm(file, { force: true });
        entry.artifactsError = (error as Error).message;
      }
    }
    await keepReports(server, id, job.reports ?? [], join(runDir, 'reports', stem), signal).catch((error: unknown) => {
      if (signal.aborted) throw error;
      entry.artifactsError = `its reports: ${(error as Error).message}`;
    });
    kept.push(entry);
  }
  return kept;
}

/** The server's handle on what exec keeps: its admin API, the jobs' stored logs and reports. */
export type KeepSource = Pick<ReferenceServer, 'url' | 'adminToken' | 'getJob' | 'getTrace' | 'reportFile'>;

/** A job's reports (JUnit, code quality, …) as the files the job wrote, under `dir` (gzip members joined). */
async function keepReports(server: KeepSource, id: number, reports: ReadonlyArray<{ type: string; filename: string }>, dir: string, signal: AbortSignal): Promise<void> {
  for (const report of reports) {
    const stored = server.reportFile(id, report.type);
    if (!stored) continue;
    await mkdir(dir, { recursive: true });
    const target = createWriteStream(join(dir, fileSafe(report.filename)));
    if (stored.gzipped) await pipeline(createReadStream(stored.path), createGunzip(), target, { signal });
    else await pipeline(createReadStream(stored.path), target, { signal });
  }
}

async function downloadArtifacts(server: KeepSource, id: number, file: string, signal: AbortSignal): Promise<void> {
  const response = await fetch(`${server.url}/admin/api/jobs/${id}/artifacts`, { headers: { 'PRIVATE-TOKEN': server.adminToken }, signal });
  if (!response.ok || !response.body) throw new CiRunnerError('EXEC_ARTIFACTS', `could not fetch the artifacts of job ${id}: HTTP ${response.status}`);
  try {
    await pipeline(Readable.fromWeb(response.body as import('node:stream/web').ReadableStream<Uint8Array>), createWriteStream(file), { signal });
  } catch (error) {
    throw new CiRunnerError('EXEC_ARTIFACTS', `could not fetch the artifacts of job ${id}: ${(error as Error).message}`, { cause: error });
  }
}

/**
 * `--artifacts-to DIR`: each job's artifacts extracted into `DIR/<job>/`, with the same checks a
 * runner applies to downloaded archives (no path leaving the dir, no link tricks).
 */
export async function extractArtifactsTo(kept: readonly KeptJob[], dir: string, signal: AbortSignal): Promise<string[]> {
  const { extractArchive } = await import('../artifacts/extract.js');
  const dirs: string[] = [];
  const seen = new Set<string>();
  for (const job of kept) {
    if (!job.artifacts) continue;
    // Two builds of one name (a retry) write to the same place; the later one wins, as in GitLab.
    const target = join(dir, fileSafe(job.name));
    if (seen.has(target)) await rm(target, { recursive: true, force: true });
    seen.add(target);
    await extractArchive(job.artifacts, target, signal);
    dirs.push(target);
  }
  return dirs;
}
