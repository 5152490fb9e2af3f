/**
 * Trigger jobs (GitLab's bridges): when one's turn comes it is `pending` like any job, but no runner
 * takes it; the server runs it. A child pipeline is created from the files it names — this commit's
 * (`include: local`) or one another job of the pipeline left in its artifacts (`include: artifact`) —
 * with `CI_PIPELINE_SOURCE=parent_pipeline` and the trigger job's variables. The trigger job then
 * succeeds, or with `strategy: depend` ends as the child pipeline ends. A pipeline this server cannot
 * run (another project's, a template's) makes the job `skipped`, with a note in its log saying why.
 * What a trigger job did is written to its log, which is all a person sees of it.
 */
import { CiRunnerError, hasCode } from '../../util/errors.js';
import type { BridgeRunner, ServerContext } from '../context.js';
import { createPipeline } from './create-pipeline.js';
import { currentBuilds, pipelineStatus } from './pipeline-progress.js';
import type { InputValues, JobTriggerSpec, TriggerInclude } from '../../pipeline/spec.js';
import { filesFromArchive, normalise } from './archive-files.js';
import type { BuildRecord, PipelineRecord } from './store.js';
import { advancePipeline, finishBuild } from './transitions.js';

/** A generated child pipeline file may be this large. */
const MAX_CHILD_CONFIG_BYTES = 1024 * 1024;
const FINAL = new Set(['success', 'failed', 'canceled', 'skipped']);

type BridgeBuild = BuildRecord & { job: { trigger: JobTriggerSpec } };

export function isBridge(build: BuildRecord): build is BridgeBuild {
  return build.job.trigger !== undefined;
}

/** Why the job cannot start a pipeline here, or undefined when it can. */
function notRunnableHere(trigger: JobTriggerSpec): string | undefined {
  if (trigger.project !== undefined) {
    return `it triggers a pipeline of another project (${trigger.project}${trigger.branch ? `, branch ${trigger.branch}` : ''}); this server runs this project's pipelines only`;
  }
  const elsewhere = trigger.include?.find((entry) => 'elsewhere' in entry);
  if (elsewhere && 'elsewhere' in elsewhere) return `its child pipeline comes from outside the project (${elsewhere.elsewhere}); this server reads this project's files only`;
  return undefined;
}

export function createBridgeRunner(ctx: ServerContext): BridgeRunner {
  /** Adds a line to the trigger job's log; never rejects (a log that cannot be written is logged instead). */
  const say = async (build: BuildRecord, text: string): Promise<void> => {
    await ctx.traces.append(build, build.traceSize, Buffer.from(`${text}\n`), []).catch((error: unknown) => {
      ctx.logger.warn({ err: error, buildId: build.id, text }, "could not write the trigger job's log");
    });
  };

  const end = (build: BuildRecord, status: 'success' | 'failed' | 'skipped', failureReason?: string): void => {
    if (status !== 'skipped') {
      finishBuild(ctx, build, status, undefined, failureReason ? { failureReason } : {});
      return;
    }
    ctx.store.changeBuild(build, (b) => {
      b.status = 'skipped';
      b.finishedAt = new Date();
    });
    advancePipeline(ctx, build.pipelineId);
  };

  const run = async (build: BridgeBuild): Promise<void> => {
    const trigger = build.job.trigger;
    const why = notRunnableHere(trigger);
    if (why !== undefined) {
      await say(build, `Trigger job ${build.job.name} skipped: ${why}.`);
      end(build, 'skipped');
      return;
    }
    const parent = ctx.store.pipelines.get(build.pipelineId);
    const project = ctx.store.projects.get(build.projectId);
    if (!parent || !project) throw new Error(`trigger job ${build.id} lost its pipeline or project`);
    try {
      const config = await childConfig(ctx, build, parent);
      const child = await createPipeline(ctx, {
        project: project.name,
        ref: parent.ref,
        config,
        variables: forwardedVariables(build, parent),
        source: 'parent_pipeline',
        ...(parent.defaultBranch !== undefined ? { defaultBranch: parent.defaultBranch } : {}),
        parent: { pipelineId: parent.id, bridgeId: build.id },
        ...artifactInputs(trigger),
      });
      await say(build, `Created child pipeline #${child.id} from ${describeInclude(trigger)}${trigger.depend ? '; this job ends as it ends (strategy: depend)' : ''}.`);
      if (!trigger.depend) end(build, 'success');
      else bridges.childMoved(child);
    } catch (error) {
      const filtered = hasCode(error, 'PIPELINE_FILTERED');
      const problems = (error as { problems?: Array<{ message: string }> }).problems?.map((p) => p.message) ?? [(error as Error).message];
      await say(build, `ERROR: the child pipeline ${filtered ? 'would run no job' : 'could not be created'}:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
      end(build, 'failed', 'downstream_pipeline_creation_failed');
    }
  };

  const started = new Set<number>();
  const ended = new Set<number>();
  const bridges: BridgeRunner = {
    start(build) {
      if (!isBridge(build) || build.status !== 'pending' || started.has(build.id)) return;
      started.add(build.id);
      ctx.store.changeBuild(build, (b) => {
        b.status = 'running';
        b.startedAt = new Date();
      });
      run(build).catch((error: unknown) => {
        ctx.logger.error({ err: error, buildId: build.id }, 'trigger job failed unexpectedly');
        void say(build, `ERROR: the trigger job failed: ${(error as Error).message}`).then(() => end(build, 'failed', 'unknown_failure'));
      });
    },
    childMoved(pipeline) {
      if (!pipeline.parent) return;
      const bridge = ctx.store.buildById(pipeline.parent.bridgeId);
      if (!bridge?.job.trigger?.depend || bridge.status !== 'running') return;
      const status = pipelineStatus(ctx.store, pipeline);
      if (!FINAL.has(status) || ended.has(bridge.id)) return;
      ended.add(bridge.id);
      void say(bridge, `Child pipeline #${pipeline.id} ${status}.`).then(() => end(bridge, status === 'success' || status === 'skipped' ? 'success' : 'failed'));
    },
  };
  return bridges;
}

/** The inputs of a child pipeline made from another job's artifact: they fill that file's own header. */
function artifactInputs(trigger: JobTriggerSpec): { inputs?: InputValues } {
  const entry = (trigger.include ?? []).find((item) => 'artifact' in item);
  return entry && 'artifact' in entry && entry.inputs ? { inputs: entry.inputs } : {};
}

function describeInclude(trigger: JobTriggerSpec): string {
  return (trigger.include ?? []).map((entry) => ('local' in entry ? entry.local : 'artifact' in entry ? `${entry.artifact} (artifacts of ${entry.job})` : entry.elsewhere)).join(', ');
}

/**
 * The child pipeline's file: its local files as an `include:` list (read from the commit like any
 * include), or the one file another job of the pipeline produced, read from that job's artifacts.
 */
async function childConfig(ctx: ServerContext, build: BridgeBuild, parent: PipelineRecord): Promise<string> {
  const include = build.job.trigger.include ?? [];
  const artifacts = include.filter((entry): entry is { artifact: string; job: string } => 'artifact' in entry);
  // JSON is YAML: each local file with the inputs its entry gives it.
  const local = (entry: TriggerInclude): string =>
    `  - local: ${JSON.stringify('local' in entry ? entry.local : '')}${'local' in entry && entry.inputs ? `\n    inputs: ${JSON.stringify(entry.inputs)}` : ''}`;
  if (artifacts.length === 0) return `include:\n${include.map(local).join('\n')}\n`;
  const [entry] = artifacts;
  if (artifacts.length > 1 || include.length > 1 || entry === undefined) {
    throw new CiRunnerError('PIPELINE_INVALID', 'trigger:include with an artifact must name that one file only (this server does not merge it with others)');
  }
  const producer = currentBuilds(ctx.store, parent).find((other) => other.job.name === entry.job);
  if (!producer?.artifacts) throw new CiRunnerError('PIPELINE_INVALID', `job ${entry.job} left no artifacts to read ${entry.artifact} from`);
  const files = await filesFromArchive(producer.artifacts.path, [entry.artifact], { maxBytes: MAX_CHILD_CONFIG_BYTES, what: 'a child pipeline file' }, ctx.closing);
  const text = files.get(normalise(entry.artifact));
  if (text === undefined) throw new CiRunnerError('PIPELINE_INVALID', `${entry.artifact} is not in the artifacts of job ${entry.job}`);
  return text;
}

/**
 * The child's pipeline variables, GitLab's `forward:` defaults: the trigger job's own variables (its
 * global ones included), and the parent's pipeline variables only with `pipeline_variables: true`.
 */
function forwardedVariables(build: BridgeBuild, parent: PipelineRecord): Record<string, string> {
  const { forward } = build.job.trigger;
  const variables: Record<string, string> = {};
  if (forward.pipelineVariables) Object.assign(variables, parent.variables);
  if (forward.yamlVariables) for (const variable of build.job.variables) variables[variable.key] = variable.value;
  return variables;
}
