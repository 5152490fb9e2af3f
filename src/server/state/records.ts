/**
 * The on-disk shapes of the server's records (durable.ts) and their conversion to and from the
 * store's: dates as ISO strings; no paths (artifacts are found by build id, so a data dir can move);
 * nothing that only matters while the process lives (queue values, last contact, last activity).
 */
import type { BuildStatus } from '../../protocol/types.js';
import type { JobSpec } from '../../pipeline/spec.js';
import type { BuildRecord, IdCounters, PipelineRecord, ProjectRecord, ReportRecord, RunnerRecord, Store } from './store.js';
import type { TestSummary } from './junit.js';

/**
 * A runner as saved: what only matters while the process lives (last contact, queue value, the API
 * and features of its last request) is not; its managers without their last contact.
 */
export type RunnerData = Omit<RunnerRecord, 'contactedAt' | 'queueValue' | 'api' | 'features' | 'managers'> & {
  managers?: Array<{ systemId: string; info: Record<string, string> }>;
};

export interface PipelineData extends Omit<PipelineRecord, 'createdAt'> {
  createdAt: string;
}

export interface BuildStateData {
  id: number;
  status: BuildStatus;
  runnerId: number | null;
  startedAt: string | null;
  finishedAt: string | null;
  artifacts: { filename: string; size: number; expireAt: string | null } | null;
  /** Retries, failure reasons, coverage and the like; absent in records written before they existed. */
  retried?: boolean;
  scheduledAt?: string | null;
  failureReason?: string;
  coverage?: number | null;
  dotenv?: Array<{ key: string; value: string }>;
  exitCode?: number;
  /** API v4 graceful cancel (absent in records written before it). */
  cancelGracefully?: boolean;
  canceling?: boolean;
  /** Reports and their test counts (absent in records written before they existed). */
  reports?: ReportRecord[];
  tests?: TestSummary;
}

export interface BuildData extends BuildStateData {
  pipelineId: number;
  projectId: number;
  job: JobSpec;
  stageIndex: number;
  token: string;
  createdAt: string;
  attempt?: number;
}

export interface SettingsData {
  registrationToken: string;
  adminToken: string;
}

export type Entry =
  | { t: 'settings'; settings: SettingsData }
  | { t: 'runner'; runner: RunnerData }
  | { t: 'runner-deleted'; id: number }
  | { t: 'project'; project: ProjectRecord }
  | { t: 'pipeline'; pipeline: PipelineData }
  | { t: 'build'; build: BuildData }
  | { t: 'build-state'; state: BuildStateData };

export interface Snapshot {
  version: 1;
  generation: number;
  nextIds: IdCounters;
  settings?: SettingsData;
  runners: RunnerData[];
  projects: ProjectRecord[];
  pipelines: PipelineData[];
  builds: BuildData[];
}

const iso = (date: Date | null): string | null => (date === null ? null : date.toISOString());
const date = (text: string | null): Date | null => (text === null ? null : new Date(text));

export function runnerData(runner: RunnerRecord): RunnerData {
  const { id, token, description, tags, runUntagged, locked, active, projectId, info, registration, accessLevel, maximumTimeout, maintenanceNote, managers } = runner;
  return {
    id, token, description, tags, runUntagged, locked, active, projectId, info,
    ...(registration ? { registration } : {}),
    ...(accessLevel ? { accessLevel } : {}),
    ...(maximumTimeout !== undefined ? { maximumTimeout } : {}),
    ...(maintenanceNote ? { maintenanceNote } : {}),
    ...(managers && managers.length > 0 ? { managers: managers.map(({ systemId, info: managerInfo }) => ({ systemId, info: managerInfo })) } : {}),
  };
}

export function pipelineData(pipeline: PipelineRecord): PipelineData {
  return { ...pipeline, buildIds: [...pipeline.buildIds], createdAt: pipeline.createdAt.toISOString() };
}

export function buildStateData(build: BuildRecord): BuildStateData {
  const artifacts = build.artifacts ? { filename: build.artifacts.filename, size: build.artifacts.size, expireAt: iso(build.artifacts.expireAt) } : null;
  return {
    id: build.id, status: build.status, runnerId: build.runnerId, startedAt: iso(build.startedAt), finishedAt: iso(build.finishedAt), artifacts,
    ...(build.retried ? { retried: true } : {}),
    ...(build.scheduledAt ? { scheduledAt: build.scheduledAt.toISOString() } : {}),
    ...(build.failureReason ? { failureReason: build.failureReason } : {}),
    ...(build.coverage !== undefined && build.coverage !== null ? { coverage: build.coverage } : {}),
    ...(build.dotenv ? { dotenv: build.dotenv } : {}),
    ...(build.exitCode !== undefined ? { exitCode: build.exitCode } : {}),
    ...(build.cancelGracefully ? { cancelGracefully: true } : {}),
    ...(build.canceling ? { canceling: true } : {}),
    ...(build.reports ? { reports: build.reports.map((report) => ({ ...report })) } : {}),
    ...(build.tests ? { tests: { ...build.tests, failedNames: [...build.tests.failedNames] } } : {}),
  };
}

export function buildData(build: BuildRecord): BuildData {
  const { pipelineId, projectId, job, stageIndex, token, attempt } = build;
  return { ...buildStateData(build), pipelineId, projectId, job, stageIndex, token, createdAt: build.createdAt.toISOString(), ...(attempt ? { attempt } : {}) };
}

/** Everything durable in `store`, as one snapshot. */
export function snapshotOf(store: Store, settings: SettingsData | undefined, generation: number): Snapshot {
  return {
    version: 1,
    generation,
    nextIds: { ...store.nextIds },
    ...(settings ? { settings } : {}),
    runners: [...store.runners.values()].map(runnerData),
    projects: [...store.projects.values()].map((project) => ({ ...project })),
    pipelines: [...store.pipelines.values()].map(pipelineData),
    builds: [...store.builds.values()].map(buildData),
  };
}

/** Where a loaded build's files are: its trace length and archive path come from the disk. */
export interface BuildFiles {
  traceSize(buildId: number): number;
  archivePath(buildId: number): string;
}

function bump(counters: IdCounters, kind: keyof IdCounters, id: number): void {
  counters[kind] = Math.max(counters[kind], id + 1);
}

function applyBuildState(build: BuildRecord, state: BuildStateData, files: BuildFiles): void {
  build.status = state.status;
  build.runnerId = state.runnerId;
  build.startedAt = date(state.startedAt);
  build.finishedAt = date(state.finishedAt);
  build.artifacts = state.artifacts
    ? { filename: state.artifacts.filename, size: state.artifacts.size, path: files.archivePath(build.id), expireAt: date(state.artifacts.expireAt) }
    : null;
  if (state.retried) build.retried = true;
  if (state.scheduledAt) build.scheduledAt = new Date(state.scheduledAt);
  if (state.failureReason) build.failureReason = state.failureReason;
  if (state.coverage !== undefined) build.coverage = state.coverage;
  if (state.dotenv) build.dotenv = state.dotenv;
  if (state.exitCode !== undefined) build.exitCode = state.exitCode;
  build.cancelGracefully = state.cancelGracefully === true ? true : undefined;
  build.canceling = state.canceling === true ? true : undefined;
  if (state.reports) build.reports = state.reports;
  if (state.tests) build.tests = state.tests;
}

/** Applies one snapshot or journal entry to `store`. Returns false for an entry it does not know. */
export function applyEntry(store: Store, entry: Entry, files: BuildFiles): boolean {
  switch (entry.t) {
    case 'settings':
      return true;
    case 'runner': {
      const previous = store.runners.get(entry.runner.id);
      const { managers, ...runner } = entry.runner;
      const contacted = (systemId: string): Date | null => previous?.managers?.find((m) => m.systemId === systemId)?.contactedAt ?? null;
      store.runners.set(entry.runner.id, {
        ...runner,
        contactedAt: previous?.contactedAt ?? null,
        queueValue: undefined,
        ...(managers ? { managers: managers.map((m) => ({ ...m, contactedAt: contacted(m.systemId) })) } : {}),
        ...(previous?.api ? { api: previous.api } : {}),
        ...(previous?.features ? { features: previous.features } : {}),
      });
      bump(store.nextIds, 'runner', entry.runner.id);
      return true;
    }
    case 'runner-deleted':
      store.runners.delete(entry.id);
      bump(store.nextIds, 'runner', entry.id);
      return true;
    case 'project':
      store.projects.set(entry.project.id, { ...entry.project });
      bump(store.nextIds, 'project', entry.project.id);
      return true;
    case 'pipeline':
      store.pipelines.set(entry.pipeline.id, { ...entry.pipeline, buildIds: [...entry.pipeline.buildIds], createdAt: new Date(entry.pipeline.createdAt) });
      bump(store.nextIds, 'pipeline', entry.pipeline.id);
      return true;
    case 'build': {
      const { pipelineId, projectId, job, stageIndex, token, attempt } = entry.build;
      const build: BuildRecord = {
        id: entry.build.id, pipelineId, projectId, job, stageIndex, token,
        status: 'created', runnerId: null, createdAt: new Date(entry.build.createdAt), startedAt: null, finishedAt: null,
        // The stale-build clock restarts with the server: a runner gets the whole timeout to report.
        lastActivityAt: Date.now(),
        traceSize: files.traceSize(entry.build.id),
        artifacts: null,
        ...(attempt ? { attempt } : {}),
      };
      applyBuildState(build, entry.build, files);
      store.builds.set(build.id, build);
      const pipeline = store.pipelines.get(pipelineId);
      if (pipeline && !pipeline.buildIds.includes(build.id)) pipeline.buildIds.push(build.id);
      bump(store.nextIds, 'build', build.id);
      return true;
    }
    case 'build-state': {
      const build = store.builds.get(entry.state.id);
      if (build) applyBuildState(build, entry.state, files);
      return true;
    }
    default:
      return false;
  }
}

/** Fills `store` from a snapshot (the journal is applied after it). */
export function applySnapshot(store: Store, snapshot: Snapshot, files: BuildFiles): void {
  for (const project of snapshot.projects) applyEntry(store, { t: 'project', project }, files);
  for (const runner of snapshot.runners) applyEntry(store, { t: 'runner', runner }, files);
  for (const pipeline of snapshot.pipelines) applyEntry(store, { t: 'pipeline', pipeline }, files);
  for (const build of snapshot.builds) applyEntry(store, { t: 'build', build }, files);
  for (const kind of ['runner', 'project', 'pipeline', 'build'] as const) {
    store.nextIds[kind] = Math.max(store.nextIds[kind], snapshot.nextIds[kind]);
  }
}
