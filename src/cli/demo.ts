/**
 * The demo behind `npm start`: the reference server in-process with the example project, a runner
 * registered against it over `/api/v4`, the example pipeline run with live job logs (a header per
 * job) and a summary table at the end. Everything lives in a temp dir removed afterwards.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RunnerApiV4Client } from '../client/v4/client.js';
import { CiRunnerError } from '../util/errors.js';
import { silentLogger, type Logger } from '../log/index.js';
import { materializeExampleProject } from '../server/example-project.js';
import { createReferenceServer, type JobView, type ReferenceServer } from '../server/index.js';
import { Agent } from '../agent/agent.js';
import { configSchema } from '../agent/config/schema.js';
import { defaultServices } from '../agent/services.js';
import { createPrinter, LiveLog, summaryTable } from '../exec/output.js';
import { shortToken } from '../util/short-token.js';

export interface DemoOptions {
  out: NodeJS.WritableStream;
  color: boolean;
  concurrent: number;
  /** Stops the demo early (Ctrl-C). */
  signal: AbortSignal;
  logger?: Logger;
  /** Pipeline YAML to run on the example project instead of its own `.gitlab-ci.yml`. */
  pipeline?: string;
}

export interface DemoResult {
  pipelineStatus: string;
  jobs: JobView[];
}

const PROJECT = 'example/hello';

/** Runs the example pipeline end to end; resolves with the pipeline's final status. */
export async function runDemo(options: DemoOptions): Promise<DemoResult> {
  const { paint, print } = createPrinter(options.out, options.color, options.signal);
  const logger = options.logger ?? silentLogger();
  const root = await mkdtemp(join(tmpdir(), 'ci-runner-demo-'));
  let server: ReferenceServer | undefined;
  let agent: Agent | undefined;
  try {
    const example = await materializeExampleProject(join(root, 'project'), options.signal);
    server = await createReferenceServer({ projects: [{ name: PROJECT, path: example.path }], dataDir: join(root, 'server') });
    print(`${paint('1', 'ci-runner demo')}: reference server at ${server.url}, project ${PROJECT}\n`);

    const client = new RunnerApiV4Client({ url: server.url });
    const registered = await client.registerRunner({ token: server.registrationToken, description: 'demo-runner', runUntagged: true, locked: false });
    await client.close();
    if (!registered.runner) throw new CiRunnerError('DEMO_FAILED', `registering the demo runner failed (status ${registered.status})`);
    print(`Registered runner demo-runner (${shortToken(registered.runner.token)}) over /api/v4\n`);

    const config = configSchema.parse({
      concurrent: options.concurrent,
      check_interval: 0.2,
      runners: [{ name: 'demo-runner', url: server.url, api: 'v4', token: registered.runner.token, builds_dir: join(root, 'builds'), cache_dir: join(root, 'cache'), trace_update_interval: 0.5 }],
    });
    // With more than one job at a time, whole lines each prefixed with the job's name.
    const live = new LiveLog({ paint, print }, options.concurrent > 1);
    agent = new Agent(
      config,
      { ...defaultServices(logger), onOutput: (build, chunk) => live.output(build.id, chunk) },
      {
        jobStarted: (_runner, build) => live.started(build.id, build.name, build.stage),
        jobFinished: (_runner, build) => live.finished(build.id),
      },
    );
    agent.start();

    const pipeline = await server.createPipeline({ project: PROJECT, config: options.pipeline ?? example.pipeline });
    print(`Pipeline #${pipeline.id} queued: ${pipeline.jobs.map((j) => j.name).join(', ')}\n`);
    // `manual`: blocked on a manual job nobody will play here, so nothing more can happen.
    const done = new Set(['success', 'failed', 'canceled', 'skipped', 'manual']);
    let view = pipeline;
    while (!done.has(view.status)) {
      options.signal.throwIfAborted();
      await new Promise((resolve) => setTimeout(resolve, 200));
      view = server.getPipeline(pipeline.id) ?? view;
    }
    agent.shutdown();
    await agent.done();
    agent = undefined;
    const jobs = view.jobs.map((j) => server?.getJob(j.id)).filter((j): j is JobView => j !== undefined);
    const rows = jobs.map((j) => ({ name: j.name, stage: j.stage, status: j.status, allowFailure: j.allow_failure ?? false, startedAt: j.started_at, finishedAt: j.finished_at }));
    print(`\n${summaryTable(rows, paint)}\n`);
    const ok = view.status === 'success';
    const blocked = view.status === 'manual' ? ' (blocked: waiting for a manual job to be played)' : '';
    print(`${paint(ok ? '1;32' : '1;31', `Pipeline #${view.id} ${view.status}${blocked}`)}\n`);
    return { pipelineStatus: view.status, jobs };
  } finally {
    if (agent) {
      agent.shutdown('forceful', 'the demo is over');
      await agent.done().catch(() => undefined);
    }
    await server?.close().catch(() => undefined);
    await rm(root, { recursive: true, force: true }).catch(() => undefined);
  }
}
