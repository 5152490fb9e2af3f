/**
 * `ci-runner exec`: the project's pipeline, from the working tree as it is, on an in-process reference
 * server with the runner code of `run`. Steps: snapshot the working tree (`snapshot.ts`), start the
 * server and create the pipeline (`pipeline.ts`), start an agent (`runner.ts`), play the manual jobs
 * asked for as they come up, wait for the pipeline, keep logs and artifacts (`keep.ts`), print the
 * summary. Everything temporary (snapshot, builds) lives in a temp dir removed at the end; nothing is
 * written to the working tree or the repository.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { CiRunnerError, hasCode } from '../util/errors.js';
import type { Logger } from '../log/index.js';
import type { PipelineSpec } from '../pipeline/spec.js';
import { notAppliedLines } from '../pipeline/keyword-notes.js';
import type { ReferenceServer } from '../server/index.js';
import type { RunPipeline } from './wait.js';
import { extractArtifactsTo, keepJobFiles, newRunDir, projectStateDirs } from './keep.js';
import { createPrinter, listTable, LiveLog, reportsSummary, summaryTable, type Printer, type ReportRow, type SummaryRow } from './output.js';
import type { Agent } from '../agent/agent.js';
import type { ExecRunnerSettings } from './runner.js';
import type { JobSelection } from './select.js';
import { snapshotWorkingTree, type Snapshot } from './snapshot.js';
import { pipelineVariables } from './variables.js';

/**
 * The server's modules, loaded while git makes the snapshot: loading them is most of exec's own
 * start-up time, and git runs in other processes meanwhile. The runner's modules wait until the
 * pipeline is known to have jobs to run (loadRunner), so a file with errors is reported without them.
 */
async function loadParts(level: ExecOptions['logLevel']): Promise<[typeof import('./pipeline.js'), typeof import('./wait.js'), Logger]> {
  const [pipeline, wait, { createLogger }] = await Promise.all([
    import('./pipeline.js').then(async (loaded) => {
      // What the server would load when the pipeline is created and the first job clones.
      await loaded.preloadServerModules();
      return loaded;
    }),
    import('./wait.js'),
    import('../log/index.js'),
  ]);
  return [pipeline, wait, createLogger({ level: level ?? 'silent' })];
}

/** The runner's modules, and what its first job would otherwise wait for, started at once (warmUpFirstJob). */
async function loadRunner(settings: ExecRunnerSettings, logger: Logger): Promise<typeof import('./runner.js')> {
  const runner = await import('./runner.js');
  runner.warmUpFirstJob(settings, logger);
  return runner;
}

type Parts = Awaited<ReturnType<typeof loadParts>>;

export interface ExecOptions {
  cwd: string;
  /** The pipeline file; default `.gitlab-ci.yml` at the working tree's top level. */
  file?: string;
  ref?: string;
  selection: JobSelection;
  /** Manual jobs to play when they come up. */
  manual: readonly string[];
  runner: ExecRunnerSettings;
  variables: readonly string[];
  envFiles: readonly string[];
  concurrent: number;
  /** Print the jobs that would run and stop. */
  list: boolean;
  artifactsTo?: string;
  out: NodeJS.WritableStream;
  color: boolean;
  signal: AbortSignal;
  /** The server's and runner's own log (stderr); `silent` when absent. */
  logLevel?: 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'silent';
  env?: NodeJS.ProcessEnv;
}

export interface ExecResult {
  /** 'listed' for --list. */
  status: string;
  exitCode: number;
}

/** A missing or unreadable pipeline file: exit 2. */
export class PipelineFileError extends CiRunnerError {
  readonly exitCode = 2;

  constructor(message: string) {
    super('EXEC_PIPELINE_FILE', message);
  }
}

/** `--file` (relative to the current directory, like every path flag), else `.gitlab-ci.yml` at the top of the tree. */
async function readPipelineFile(snapshot: Snapshot, file: string | undefined): Promise<{ path: string; shown: string; text: string }> {
  const path = file === undefined ? join(snapshot.topLevel, '.gitlab-ci.yml') : resolve(file);
  const shown = file ?? (relative(process.cwd(), path) || path);
  try {
    return { path, shown, text: await readFile(path, 'utf8') };
  } catch (error) {
    const missing = (error as NodeJS.ErrnoException).code === 'ENOENT';
    throw new PipelineFileError(missing ? `no pipeline file ${path}; add a .gitlab-ci.yml or name one with --file` : `cannot read ${path}: ${(error as Error).message}`);
  }
}

/** Runs (or with `list`, shows) the pipeline; resolves with the exit code. Throws errors with `exitCode` 2 for bad input. */
export async function runExec(options: ExecOptions): Promise<ExecResult> {
  const printer = createPrinter(options.out, options.color, options.signal);
  const cwd = resolve(options.cwd);
  const temp = await mkdtemp(join(tmpdir(), 'ci-runner-exec-'));
  let server: ReferenceServer | undefined;
  let agent: Agent | undefined;
  let runner: typeof import('./runner.js') | undefined;
  try {
    const [snapshot, parts] = await Promise.all([
      snapshotWorkingTree(cwd, join(temp, 'snapshot'), { ...(options.ref !== undefined ? { ref: options.ref } : {}), signal: options.signal }),
      loadParts(options.logLevel),
    ]);
    const [{ createExecPipeline, startServer }, , logger] = parts;
    const pipelineFile = await readPipelineFile(snapshot, options.file);
    const variables = await pipelineVariables(options.envFiles, options.variables);
    const started = await startServer(snapshot, logger);
    server = started.server;
    let created;
    try {
      created = await createExecPipeline({ ...started, snapshot, file: pipelineFile.shown, config: pipelineFile.text, variables, selection: options.selection });
    } catch (error) {
      // workflow: rules (or every job's rules) left nothing to run: GitLab creates no pipeline, and nothing failed.
      if (!hasCode(error, 'PIPELINE_FILTERED')) throw error;
      printer.print(`No pipeline: ${(error as Error).message}\n`);
      return { status: 'filtered', exitCode: 0 };
    }
    const { pipeline, spec } = created;
    for (const warning of spec.warnings ?? []) printer.print(`${printer.paint('33', 'warning')}: ${warning}\n`);
    for (const line of notAppliedLines(spec.notApplied ?? [], spec.jobs)) printer.print(`${printer.paint('33', 'not applied locally')}: ${line}\n`);
    checkManual(spec, options.manual);
    if (options.list) {
      printer.print(`${listTable(spec.jobs, spec.stages, printer.paint)}\n`);
      return { status: 'listed', exitCode: 0 };
    }
    runner = await loadRunner(options.runner, logger);
    // The runner registers while the header is printed; its agent starts once it has a token.
    const registered = runner.registerExecRunner(server);
    registered.catch(() => undefined); // awaited below; a failure is thrown there
    const named = pipeline.name === undefined ? '' : ` (${pipeline.name})`;
    printer.print(`${printer.paint('1', 'ci-runner exec')}: ${describeSnapshot(snapshot)}; pipeline #${pipeline.id}${named}: ${pipeline.jobs.map((j) => j.name).join(', ')}\n`);
    hintManual(spec, options, printer);
    const dirs = projectStateDirs(snapshot.topLevel, options.env);
    const token = await registered;
    // exec is the machine the jobs run on: its runner takes every job, whatever tags it names.
    const tags = new Set(spec.jobs.flatMap((job) => job.tags));
    server.setRunnerTags(token, [...tags]);
    agent = startRunner(runner, server, token, { builds: join(temp, 'builds'), cache: dirs.cache }, options, printer, logger, spec.jobs.length > 1);
    return await finishPipeline(parts, server, pipeline.id, { token, tags }, agent, dirs.root, options, printer);
  } finally {
    if (agent && runner) await runner.stopAgent(agent);
    await server?.close().catch(() => undefined);
    await rm(temp, { recursive: true, force: true }).catch(() => undefined);
  }
}

function startRunner(runner: typeof import('./runner.js'), server: ReferenceServer, token: string, dirs: { builds: string; cache: string }, options: ExecOptions, printer: Printer, logger: Logger, severalJobs: boolean): Agent {
  const entry = runner.execRunnerConfig(options.runner, server.url, token, dirs);
  // Lines are prefixed with their job's name when jobs can run side by side.
  return runner.startAgent(entry, options.concurrent, new LiveLog(printer, options.concurrent > 1 && severalJobs), logger);
}

function describeSnapshot(snapshot: Snapshot): string {
  const what = snapshot.dirty ? `working tree with uncommitted changes (snapshot ${snapshot.sha.slice(0, 8)})` : `commit ${snapshot.sha.slice(0, 8)} (working tree clean)`;
  const ref = snapshot.detachedAs ? `${snapshot.ref} (HEAD is detached; --ref names another)` : snapshot.ref;
  return `${what} as ${snapshot.tag ? 'tag' : 'branch'} ${ref}`;
}

/** A `--manual` name must be a job of the pipeline (a child pipeline's jobs are known only once it runs). */
function checkManual(spec: PipelineSpec, manual: readonly string[]): void {
  if (spec.jobs.some((job) => job.trigger?.include)) return;
  const missing = manual.filter((name) => !spec.jobs.some((job) => job.name === name));
  if (missing.length > 0) {
    throw new PipelineFileError(`--manual ${missing.join(', ')}: no such job in the jobs that run (${spec.jobs.map((j) => j.name).join(', ')})`);
  }
}

/**
 * Named manual jobs that will not be played get a hint, so an idle pipeline is not a mystery; so do
 * images that the shell executor does not use.
 */
function hintManual(spec: PipelineSpec, options: ExecOptions, printer: Printer): void {
  for (const job of spec.jobs) {
    if (job.when === 'manual' && !options.manual.includes(job.name)) {
      printer.print(`${printer.paint('33', 'note')}: ${job.name} is a manual job and stays manual; --manual '${job.name}' plays it\n`);
    }
  }
  const images = [...new Set(spec.jobs.flatMap((job) => (job.image ? [job.image] : [])))];
  if (options.runner.executor === 'shell' && images.length > 0) {
    printer.print(`${printer.paint('33', 'note')}: jobs name images (${images.join(', ')}); the shell executor runs them on this machine instead (--executor docker runs them in their images)\n`);
  }
}

/** Waits for the pipeline and its child pipelines, keeps their logs and artifacts, prints the summary; the exit code. */
async function finishPipeline(
  parts: Parts,
  server: ReferenceServer,
  pipelineId: number,
  runner: { token: string; tags: Set<string> },
  agent: Agent,
  stateRoot: string,
  options: ExecOptions,
  printer: Printer,
): Promise<ExecResult> {
  const [, { waitForPipeline }] = parts;
  const note = (text: string): void => printer.print(`${printer.paint('33', 'note')}: ${text}\n`);
  const tree = await waitForPipeline(server, pipelineId, { manual: options.manual, runner, agentDone: agent.done(), note, signal: options.signal });
  await printTriggerNotes(server, tree, printer);
  const runDir = await newRunDir(stateRoot);
  const kept = await keepJobFiles(server, tree.flatMap((pipeline) => pipeline.view.jobs.map((j) => j.id)), runDir, options.signal);
  for (const job of kept) if (job.artifactsError) note(`the artifacts of job ${job.name} were not kept: ${job.artifactsError}`);
  printer.print(`\n${summaryTable(summaryRows(server, tree), printer.paint)}\n`);
  const reports = reportsSummary(reportRows(server, tree), printer.paint);
  if (reports !== '') printer.print(`\n${reports}\n`);
  const root = tree[0]?.view;
  if (!root) throw new CiRunnerError('EXEC_INTERNAL', `pipeline #${pipelineId} disappeared from the server`);
  for (const child of tree.slice(1)) {
    const alone = child.view.status === 'failed' && server.getJob(child.view.parent?.job_id ?? 0)?.status === 'success';
    note(`child pipeline #${child.view.id} (from trigger job ${child.trigger ?? '?'}) ${child.view.status}${alone ? '; the pipeline does not wait for it, as its trigger job has no strategy: depend' : ''}`);
  }
  const passed = root.status === 'success' || root.status === 'skipped';
  const verdict = passed ? 'passed' : root.status === 'failed' || root.status === 'canceled' ? root.status : 'blocked: a manual job waits (--manual JOB plays it)';
  const named = root.name === undefined ? '' : ` (${root.name})`;
  printer.print(`${printer.paint(passed ? '1;32' : '1;31', `Pipeline #${pipelineId}${named} ${verdict}`)}\n`);
  printer.print(`Logs and artifacts: ${runDir}\n`);
  if (options.artifactsTo !== undefined) {
    const target = resolve(options.artifactsTo);
    const written = await extractArtifactsTo(kept, target, options.signal);
    printer.print(written.length === 0 ? `No job uploaded artifacts; nothing copied to ${target}\n` : `Artifacts copied to ${target}: ${written.map((d) => relative(target, d)).join(', ')}\n`);
  }
  return { status: root.status, exitCode: passed ? 0 : 1 };
}

/** One row per job, a child pipeline's named after its trigger job (`trigger » job`). */
function summaryRows(server: ReferenceServer, tree: readonly RunPipeline[]): SummaryRow[] {
  return tree.flatMap(({ view, trigger }) =>
    view.jobs.map((job) => {
      const detail = server.getJob(job.id);
      const name = trigger === undefined ? job.name : `${trigger} » ${job.name}`;
      return { name, stage: job.stage, status: job.status, allowFailure: job.allow_failure, startedAt: detail?.started_at ?? null, finishedAt: detail?.finished_at ?? null };
    }),
  );
}

/** Each job's test counts, coverage and reports, named as in the summary. */
function reportRows(server: ReferenceServer, tree: readonly RunPipeline[]): ReportRow[] {
  return tree.flatMap(({ view, trigger }) =>
    view.jobs.map((job) => {
      const detail = server.getJob(job.id);
      const row: ReportRow = { name: trigger === undefined ? job.name : `${trigger} » ${job.name}` };
      if (detail?.tests) row.tests = detail.tests;
      if (detail?.coverage !== undefined) row.coverage = detail.coverage;
      if (detail?.reports) row.reports = detail.reports;
      return row;
    }),
  );
}

/** What each trigger job did (its log is the server's notes: the child pipeline, or why it was skipped). */
async function printTriggerNotes(server: ReferenceServer, tree: readonly RunPipeline[], printer: Printer): Promise<void> {
  for (const { view } of tree) {
    for (const job of view.jobs) {
      if (server.getJob(job.id)?.trigger !== true) continue;
      const text = (await server.getTrace(job.id)).toString('utf8').trim();
      if (text !== '') printer.print(`\n${printer.paint('1;36', `━━━ trigger job ${job.name} ━━━`)}\n${text}\n`);
    }
  }
}
