/**
 * The server's records: runners, projects, pipelines and builds, in memory. Trace bytes and artifact
 * files live on disk (`traces.ts`, `artifacts.ts`); a build record only holds their sizes and
 * paths. Everything here is synchronous, which is what makes E4's pick-and-assign atomic: Node runs
 * one handler at a time between awaits. With a data dir, every change is also handed to a `sink`
 * (`durable.ts`), synchronously, before the change is acknowledged to anyone.
 */
import type { BuildStatus } from '../../protocol/types.js';
import type { JobOutcome } from '../../pipeline/select.js';
import type { AutoCancelSpec, JobSpec } from '../../pipeline/spec.js';
import { randomToken, runnerToken, shortToken } from '../tokens.js';
import type { TestSummary } from './junit.js';

export interface RunnerRecord {
  id: number;
  token: string;
  description: string;
  tags: string[];
  runUntagged: boolean;
  locked: boolean;
  active: boolean;
  /** Specific runners belong to one project; shared runners have none. */
  projectId: number | null;
  info: Record<string, string>;
  contactedAt: Date | null;
  /** The `last_update` queue value (§4.4.1); minted lazily. */
  queueValue: string | undefined;
  /**
   * How the runner came to be: `registration` (a registration token, API v1 `runners/register` or
   * v4 `POST /runners`) or `created` (the admin API or the web page, a `glrt-` token). Absent in
   * records from before API v4: `registration`.
   */
  registration?: RunnerRegistration;
  /** v4 `access_level`: `ref_protected` runners take jobs of protected refs only. Absent: `not_protected`. */
  accessLevel?: RunnerAccessLevel;
  /** v4 `maximum_timeout` in seconds: caps the timeout of every job the runner takes. */
  maximumTimeout?: number;
  /** v4 `maintenance_note`: free text for admins. */
  maintenanceNote?: string;
  /** When the token stops working (ISO 8601; `--runner-token-expires-in`); absent: never. */
  tokenExpiresAt?: string;
  /** The hosts using this runner's token, by `system_id` (API v4 runner managers). */
  managers?: RunnerManager[];
  /** Which API the runner last asked for a job through, and the `info.features` it announced then (in memory only). */
  api?: RunnerApi;
  features?: Record<string, boolean>;
}

export type RunnerRegistration = 'registration' | 'created';
export type RunnerAccessLevel = 'not_protected' | 'ref_protected';
export type RunnerApi = 'v1' | 'v4';

/** One host of a runner (GitLab's runner manager): what it said of itself and when. */
export interface RunnerManager {
  systemId: string;
  info: Record<string, string>;
  contactedAt: Date | null;
}

export interface ProjectRecord {
  id: number;
  /** `namespace/project` */
  name: string;
  /** A git repository on disk. */
  path: string;
  runnersToken: string;
  /** The resource groups whose process mode was set (`resource-groups.ts`), by expanded name. */
  resourceGroups?: Record<string, { processMode: ProcessMode; updatedAt: string }>;
}

/** How a resource group picks the next job (`resource-groups.ts`), GitLab's names. */
export type ProcessMode = 'unordered' | 'oldest_first' | 'newest_first' | 'newest_ready_first';

export interface PipelineRecord {
  id: number;
  projectId: number;
  ref: string;
  tag: boolean;
  sha: string;
  beforeSha: string;
  /** Variables given with the admin request: sent as non-public secrets. */
  variables: Record<string, string>;
  /** How some of `variables` are sent (absent: masked, not a file, expanded). */
  variableFlags?: Record<string, VariableFlags>;
  stages: string[];
  buildIds: number[];
  createdAt: Date;
  /** `CI_PIPELINE_SOURCE`; absent in records from before it existed (then `push`). */
  source?: string;
  /** `CI_DEFAULT_BRANCH`: the branch the project's HEAD named when the pipeline was created. */
  defaultBranch?: string;
  /** What `workflow: rules` decided, and each job's rule outcome (also of jobs left out). */
  workflow?: string;
  outcomes?: JobOutcome[];
  /** A child pipeline: the pipeline and trigger job that created it. */
  parent?: { pipelineId: number; bridgeId: number };
  /** `workflow: name`, expanded (`CI_PIPELINE_NAME`). */
  name?: string;
  /** `workflow: auto_cancel` as the pipeline's rules decided it. */
  autoCancel?: AutoCancelSpec;
  /** Keys of the file that this server accepts but does not apply, one line each. */
  notApplied?: string[];
}

/** API v4's variable attributes a pipeline variable can be given. */
export interface VariableFlags {
  /** Default true: the runner masks the value in the log. */
  masked?: boolean;
  /** The runner writes the value to a file and puts the file's path in the variable. */
  file?: boolean;
  /** The value is taken literally: `$NAME` in it is not expanded. */
  raw?: boolean;
}

export interface ArtifactsRecord {
  filename: string;
  size: number;
  path: string;
  expireAt: Date | null;
}

export interface BuildRecord {
  id: number;
  pipelineId: number;
  projectId: number;
  job: JobSpec;
  stageIndex: number;
  token: string;
  status: BuildStatus;
  runnerId: number | null;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  /** Last E4 assignment, E5 or E6 (ms since epoch): the stale-build sweeper reads it. */
  lastActivityAt: number;
  traceSize: number;
  artifacts: ArtifactsRecord | null;
  /** Replaced by a newer build of the same job (a retry): kept as history, no longer counts. */
  retried?: boolean;
  /** How many builds of this job came before it in the pipeline (0 for the first; a retry adds one). */
  attempt?: number;
  /** When a `scheduled` (delayed) build is queued. */
  scheduledAt?: Date | null;
  /** GitLab's failure reason of a failed build (`script_failure`, …; see failure-reason.ts). */
  failureReason?: string;
  /** The percentage the job's `coverage:` regex found in its trace. */
  coverage?: number | null;
  /** The script's exit status of a failed build, as its trace told it (for `allow_failure: exit_codes`). */
  exitCode?: number;
  /** Variables from the job's `artifacts:reports:dotenv` file, for the jobs that take its artifacts. */
  dotenv?: Array<{ key: string; value: string }>;
  /**
   * The runner announced `cancel_gracefully` when it took the build (API v4): a cancel then asks it
   * to stop the script and still run `after_script` (`canceling`) instead of killing the job.
   */
  cancelGracefully?: boolean;
  /** A graceful cancel was asked for: the build still runs (after_script) until its runner reports; it then ends `canceled`. */
  canceling?: boolean;
  /** The `system_id` of the runner manager that took the build (API v4), whose contact its job updates renew. In memory only. */
  managerSystemId?: string;
  /** The `artifacts:reports` the job uploaded (other than dotenv), by GitLab's artifact type (`reports.ts`). */
  reports?: ReportRecord[];
  /** What its JUnit reports say: passed, failed and skipped tests. */
  tests?: TestSummary;
}

/** One report a job uploaded: its type (`junit`, `cobertura`, `sast`, …), file name and size. */
export interface ReportRecord {
  type: string;
  filename: string;
  size: number;
  format: string;
}

/** Where changes go to be made durable. Each call returns once the change is on disk. */
export interface StoreSink {
  runner(runner: RunnerRecord): void;
  runnerDeleted(id: number): void;
  project(project: ProjectRecord): void;
  pipeline(pipeline: PipelineRecord): void;
  /** A new build (`added`), or a change of its state, runner, dates or artifacts. */
  build(build: BuildRecord, added: boolean): void;
}

export interface IdCounters {
  runner: number;
  project: number;
  pipeline: number;
  build: number;
}

export class Store {
  readonly runners = new Map<number, RunnerRecord>();
  readonly projects = new Map<number, ProjectRecord>();
  readonly pipelines = new Map<number, PipelineRecord>();
  readonly builds = new Map<number, BuildRecord>();
  /** The next id of each kind; ids are never reused, deleted ones included. */
  readonly nextIds: IdCounters = { runner: 1, project: 1, pipeline: 1, build: 1 };
  sink: StoreSink | undefined;

  /**
   * A new runner with a fresh token: a `glrt-` one for runners `created` on the server, else the
   * legacy kind. `active` defaults to true.
   */
  addRunner(fields: Omit<RunnerRecord, 'id' | 'token' | 'contactedAt' | 'queueValue' | 'active'> & { active?: boolean }): RunnerRecord {
    const runner: RunnerRecord = {
      ...fields,
      id: this.nextIds.runner++,
      token: this.newRunnerToken(fields.registration ?? 'registration'),
      active: fields.active ?? true,
      contactedAt: null,
      queueValue: undefined,
    };
    this.sink?.runner(runner);
    this.runners.set(runner.id, runner);
    return runner;
  }

  /** A token no runner has, unique in its short form (runners name directories after it). */
  newRunnerToken(kind: RunnerRegistration): string {
    return runnerToken(new Set([...this.runners.values()].flatMap((runner) => [shortToken(runner.token), runner.token.slice(0, 8)])), kind === 'created');
  }

  /**
   * Gives `runner` a new token (v4 `reset_authentication_token`), expiring at `expiresAt` (ISO 8601)
   * or never; the old one stops working at once.
   */
  resetRunnerToken(runner: RunnerRecord, expiresAt?: string): string {
    const previous = { token: runner.token, tokenExpiresAt: runner.tokenExpiresAt };
    runner.token = this.newRunnerToken(runner.registration ?? 'registration');
    if (expiresAt) runner.tokenExpiresAt = expiresAt;
    else delete runner.tokenExpiresAt;
    try {
      this.saveRunner(runner);
    } catch (error) {
      Object.assign(runner, previous);
      throw error;
    }
    return runner.token;
  }

  /** Records a change to a runner's settings (active, info). */
  saveRunner(runner: RunnerRecord): void {
    this.sink?.runner(runner);
  }

  deleteRunner(id: number): void {
    this.sink?.runnerDeleted(id);
    this.runners.delete(id);
  }

  /** The runner whose token this is, unless the token has expired (GitLab refuses those: 403). */
  runnerByToken(token: string | undefined, now = Date.now()): RunnerRecord | undefined {
    if (!token) return undefined;
    for (const runner of this.runners.values()) {
      if (runner.token !== token) continue;
      return runner.tokenExpiresAt !== undefined && Date.parse(runner.tokenExpiresAt) <= now ? undefined : runner;
    }
    return undefined;
  }

  addProject(name: string, path: string): ProjectRecord {
    const existing = this.projectByName(name);
    if (existing) {
      if (existing.path !== path) {
        existing.path = path;
        this.sink?.project(existing);
      }
      return existing;
    }
    const project: ProjectRecord = { id: this.nextIds.project++, name, path, runnersToken: randomToken(20) };
    this.sink?.project(project);
    this.projects.set(project.id, project);
    return project;
  }

  /** Records a change to a project's settings (its resource groups' process modes). */
  saveProject(project: ProjectRecord): void {
    this.sink?.project(project);
  }

  projectByName(name: string): ProjectRecord | undefined {
    for (const project of this.projects.values()) if (project.name === name) return project;
    return undefined;
  }

  projectByRunnersToken(token: string): ProjectRecord | undefined {
    for (const project of this.projects.values()) if (project.runnersToken === token) return project;
    return undefined;
  }

  addPipeline(fields: Omit<PipelineRecord, 'id' | 'buildIds' | 'createdAt'>): PipelineRecord {
    const pipeline: PipelineRecord = { ...fields, id: this.nextIds.pipeline++, buildIds: [], createdAt: new Date() };
    this.sink?.pipeline(pipeline);
    this.pipelines.set(pipeline.id, pipeline);
    return pipeline;
  }

  addBuild(pipeline: PipelineRecord, job: JobSpec, stageIndex: number, attempt = 0): BuildRecord {
    const build: BuildRecord = {
      id: this.nextIds.build++,
      pipelineId: pipeline.id,
      projectId: pipeline.projectId,
      job,
      stageIndex,
      token: randomToken(20),
      status: 'created',
      runnerId: null,
      createdAt: new Date(),
      startedAt: null,
      finishedAt: null,
      lastActivityAt: Date.now(),
      traceSize: 0,
      artifacts: null,
      ...(attempt > 0 ? { attempt } : {}),
    };
    this.sink?.build(build, true);
    this.builds.set(build.id, build);
    pipeline.buildIds.push(build.id);
    return build;
  }

  /** Records a change to a build's state, runner, dates or artifacts (unchanged builds cost nothing). */
  saveBuild(build: BuildRecord): void {
    this.sink?.build(build, false);
  }

  /**
   * Applies `change` to a build's state fields and records it; if recording fails (a full disk), the
   * build is put back as it was and the error thrown, so memory never runs ahead of the data dir.
   */
  changeBuild(build: BuildRecord, change: (build: BuildRecord) => void): void {
    const { status, runnerId, startedAt, finishedAt, retried, scheduledAt, failureReason, coverage, dotenv, exitCode, cancelGracefully, canceling, reports, tests } = build;
    change(build);
    try {
      this.saveBuild(build);
    } catch (error) {
      Object.assign(build, { status, runnerId, startedAt, finishedAt, retried, scheduledAt, failureReason, coverage, dotenv, exitCode, cancelGracefully, canceling, reports, tests });
      throw error;
    }
  }

  pipelineBuilds(pipeline: PipelineRecord): BuildRecord[] {
    return pipeline.buildIds.map((id) => this.builds.get(id)).filter((build): build is BuildRecord => build !== undefined);
  }

  /** A build id from a URL segment: any integer string, negative ones included (they simply miss). */
  buildById(id: number): BuildRecord | undefined {
    return this.builds.get(id);
  }

  /** The running (or canceling) build whose token `token` is: a job token stands for its job only while the job runs. */
  runningBuildByToken(token: string): BuildRecord | undefined {
    for (const build of this.builds.values()) if (build.status === 'running' && build.token === token) return build;
    return undefined;
  }
}
