/**
 * The runner side of `exec`: a runner registered on the in-process server and the same `Agent` that
 * `ci-runner run` uses polling it over `/api/v4`, with its job output going to the live log.
 */
import { Agent } from '../agent/agent.js';
import { configSchema, runnerSchema, type RunnerConfig } from '../agent/config/schema.js';
import { defaultServices, preloadJobModules } from '../agent/services.js';
import { RunnerApiV4Client } from '../client/v4/client.js';
import { processContainment } from '../executors/cgroup/containment.js';
import { CiRunnerError } from '../util/errors.js';
import type { Logger } from '../log/index.js';
import type { ReferenceServer } from '../server/index.js';
import type { LiveLog } from './output.js';

/** What `exec` takes from the command line for its runner entry (validated by the config schema). */
export interface ExecRunnerSettings {
  executor: 'shell' | 'docker';
  shell: 'bash' | 'sh';
  /** The raw `[runners.docker]` table from the `--docker-*` flags. */
  docker: Record<string, unknown>;
}

/** The runner entry as a config.toml entry would give it; throws `CiRunnerError` on a bad docker flag value. */
export function execRunnerConfig(settings: ExecRunnerSettings, url: string, token: string, dirs: { builds: string; cache: string }): RunnerConfig {
  const parsed = runnerSchema.safeParse({
    name: 'exec',
    url,
    api: 'v4',
    token,
    executor: settings.executor,
    shell: settings.shell,
    builds_dir: dirs.builds,
    cache_dir: dirs.cache,
    trace_update_interval: 1,
    docker: settings.docker,
  });
  if (!parsed.success) {
    throw new CiRunnerError('EXEC_RUNNER_INVALID', parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('\n'));
  }
  return parsed.data;
}

/**
 * Starts what the first job would otherwise wait for, while the runner registers and its agent
 * starts: the containment probe (a shell moved into a cgroup, once per process) and the modules of
 * the executor and the trace. Failures are left for the job to meet and report.
 */
export function warmUpFirstJob(settings: ExecRunnerSettings, logger: Logger): void {
  void processContainment(logger).catch(() => undefined);
  void preloadJobModules(settings.executor);
}

/** Registers a runner for every job on `server` (over v4); its token. */
export async function registerExecRunner(server: ReferenceServer): Promise<string> {
  const client = new RunnerApiV4Client({ url: server.url });
  try {
    const registered = await client.registerRunner({ token: server.registrationToken, description: 'exec', runUntagged: true, locked: false });
    if (!registered.runner) throw new CiRunnerError('EXEC_REGISTER', `registering exec's runner failed (status ${registered.status})`);
    return registered.runner.token;
  } finally {
    await client.close();
  }
}

/**
 * Starts the agent: `concurrent` jobs at once, as many polls held open (long polls, so a job that
 * becomes pending starts at once).
 */
export function startAgent(runner: RunnerConfig, concurrent: number, log: LiveLog, logger: Logger): Agent {
  const config = configSchema.parse({ concurrent, check_interval: 0.2, shutdown_timeout: 5, runners: [] });
  const agent = new Agent(
    { ...config, runners: [{ ...runner, request_concurrency: concurrent }] },
    { ...defaultServices(logger), onOutput: (build, chunk) => log.output(build.id, chunk) },
    {
      jobStarted: (_runner, build) => log.started(build.id, build.name, build.stage),
      jobFinished: (_runner, build) => log.finished(build.id),
    },
  );
  agent.start();
  return agent;
}

/** Stops polling and waits for the agent; jobs still running are canceled (there are none when the pipeline is over). */
export async function stopAgent(agent: Agent): Promise<void> {
  // Forceful: the held long polls end at once instead of running out.
  agent.shutdown('forceful', 'the pipeline is over');
  await agent.done();
}
