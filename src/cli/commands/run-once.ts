/**
 * `ci-runner run-once` (and `run-single`, GitLab Runner's name for it): take jobs with no config
 * file — one by default, `--max-builds N` for more — run them, exit with their result. Every flag
 * can also come from the environment (see run-once-options.ts), so a container can be started
 * with the environment alone.
 */
import type { ArgumentsCamelCase, Argv, CommandModule } from 'yargs';
import { CommandError, EXIT } from '../support.js';
import { handleStopSignals } from '../stop-signals.js';
import { loadConfigWithWarnings } from '../../agent/config-read.js';
import { resolveConfigPath } from '../../agent/config/index.js';
import { runnerSchema, type RunnerConfig } from '../../agent/config/schema.js';
import { addDockerFlags, dockerTableFromFlags, flagOfKey } from '../docker-flags.js';
import { addKubernetesFlags, kubernetesFlagOfPath, kubernetesTableFromFlags } from '../kubernetes-flags.js';
import { addCustomFlags, customFlagOfKey, customTableFromFlags } from '../custom-flags.js';
import { keepDaemonRunning } from '../last-resort.js';
import { addTlsFlags, checkTlsFlags, tlsFromFlags } from '../tls-flags.js';
import type { RunJobsResult } from '../../agent/run-jobs.js';
import { parseDurationMs } from '../../util/duration.js';
import { addEnvOptions, flagLabel, resolveEnvOptions } from '../env-options.js';
import { requestedLogLevel } from '../global-options.js';
import { RUN_ONCE_FLAGS, type RunOnceValues } from './run-once-options.js';

interface RunOnceArgs extends Partial<RunOnceValues> {
  'tls-ca-file'?: string;
  'tls-cert-file'?: string;
  'tls-key-file'?: string;
  [dockerFlag: `docker-${string}`]: unknown;
  [kubernetesFlag: `kubernetes-${string}`]: unknown;
  [customFlag: `custom-${string}`]: unknown;
}

export const runOnceCommand: CommandModule<object, RunOnceArgs> = {
  command: 'run-once',
  aliases: ['run-single'],
  describe: 'Take jobs without a config file (one by default), run them, exit with their result; run-single is its GitLab Runner name',
  builder: (y: Argv) =>
    addCustomFlags(addKubernetesFlags(addDockerFlags(addTlsFlags(addEnvOptions(y, RUN_ONCE_FLAGS)))))
      .example('$0 run-once --url https://ci.example.com/ --token TOKEN --executor docker --docker-image alpine:3.20', 'One job in a container, then exit')
      .example('$0 run-once --url https://ci.example.com/ --token TOKEN --executor kubernetes --kubernetes-namespace ci --kubernetes-image alpine:3.20', 'One job as a pod in the cluster KUBECONFIG (or the pod\'s service account) names, then exit')
      .example('$0 run-once --url https://ci.example.com/ --token TOKEN --executor custom --custom-config-exec /opt/driver/config.sh --custom-run-exec /opt/driver/run.sh --custom-cleanup-exec /opt/driver/cleanup.sh', 'One job through a custom executor\'s driver programs, then exit')
      .example('CI_SERVER_URL=... RUNNER_TOKEN=... $0 run-single --max-builds 5 --wait-timeout 10m', 'Up to five jobs, exiting after ten minutes without one')
      .epilogue(
        'Values come from flags, then the environment names shown, then the defaults. Each job\'s log location is printed on standard error when it starts; --show-log also copies the log to standard output.\nExit codes: 0 every job succeeded; 1 a job failed; 2 bad usage, an unusable TLS file, --executor custom without a run_exec, or --executor docker and the docker engine does not answer (--executor kubernetes: the cluster does not answer or refuses a permission the executor needs); 3 the coordinator refused the token or could not be reached; 4 no job arrived within --wait-timeout; 130/143 stopped by SIGINT/SIGTERM before a job arrived.\nSignals (as GitLab Runner): SIGQUIT takes no new job and lets running ones finish; SIGTERM/SIGINT abort running jobs (reported failed, runner_interrupted) and wait up to --shutdown-timeout for their final updates, then exit 1; a further signal meanwhile exits 1 at once.',
      ) as unknown as Argv<RunOnceArgs>,
  handler: async (argv: ArgumentsCamelCase<RunOnceArgs>) => {
    // Invoked as run-single, the defaults are GitLab Runner's: jobs until stopped, waiting without limit.
    const legacy = argv._[0] === 'run-single';
    const values = resolveEnvOptions(argv, RUN_ONCE_FLAGS) as unknown as RunOnceValues;
    const tls = tlsFromFlags(argv);
    // Before the first poll: an unusable file is exit 2 naming it, not a transport error per poll.
    checkTlsFlags(tls);
    const runner = values.runner === undefined ? runnerFromFlags(argv) : { ...(await runnerFromConfig(values.config, values.runner)), ...tls.files };
    const waitTimeout = values['wait-timeout'] ?? (legacy ? '0' : '60s');
    const waitTimeoutMs = durationOf('wait-timeout', waitTimeout, argv);
    const pollIntervalMs = durationOf('poll-interval', values['poll-interval'], argv);
    const shutdownMs = durationOf('shutdown-timeout', values['shutdown-timeout'], argv);
    const maxBuilds = values['max-builds'] ?? (legacy ? 0 : 1);
    if (runner.executor === 'custom' && runner.custom.run_exec === '') {
      throw new CommandError(EXIT.usage, `cannot run custom jobs: no run_exec (${values.runner === undefined ? '--custom-run-exec or CUSTOM_RUN_EXEC' : `[runners.custom] of runner "${values.runner}"`})`);
    }
    if (runner.executor === 'docker' || runner.executor === 'kubernetes') {
      // Better to refuse at once than to take a job only to fail it.
      const { checkExecutor } = await import('../../agent/executor-check.js');
      const check = await checkExecutor(runner);
      if (!check.ok) throw new CommandError(EXIT.usage, `cannot run ${runner.executor} jobs: ${check.reason}`);
    }
    const [{ JobInterrupted }, { runJobs }, { defaultServices }, { createLogger }, { JobLogTee, jobLogLocation }, { loadSystemId, uniqueSystemId }] = await Promise.all([
      import('../../agent/job/job-signal.js'),
      import('../../agent/run-jobs.js'),
      import('../../agent/services.js'),
      import('../../log/index.js'),
      import('../job-output.js'),
      import('../../agent/config/system-id.js'),
    ]);
    const logger = createLogger({ level: requestedLogLevel(argv) ?? 'warn' });
    // A runner of a config file has that file's system id; one from flags gets one for this process (GitLab Runner's run-single).
    const kept = values.runner === undefined ? undefined : await loadSystemId(resolveConfigPath(values.config));
    if (kept?.unsaved) logger.warn(`system id: ${kept.unsaved}`);
    const systemId = kept?.id ?? (await uniqueSystemId());
    keepDaemonRunning(logger);
    const limit = Math.max(1, values.limit);
    const tee = values['show-log'] ? new JobLogTee(process.stdout, runner.token, limit > 1 && maxBuilds !== 1) : undefined;
    const stopJob = new AbortController();
    const signals = handleStopSignals(
      logger,
      { graceful: () => logger.warn('Requested quit, waiting for builds to finish'), forceful: (signal) => stopJob.abort(new JobInterrupted(`aborted: the runner was stopped (${signal})`)) },
      () => shutdownMs,
    );
    signals.forcedExit.then((why) => {
      // As GitLab Runner's run-single: no more waiting; an owed final update goes at the next start.
      process.stderr.write(`ci-runner: ${why}\n`);
      process.exit(EXIT.jobFailed);
    }, () => undefined);
    try {
      const services = defaultServices(logger);
      const result = await runJobs({
        runner,
        services: tee ? { ...services, onOutput: (build, chunk) => tee.write(build, chunk) } : services,
        waitTimeoutMs,
        pollIntervalMs,
        maxBuilds,
        limit,
        requestConcurrency: Math.max(1, values['request-concurrency']),
        stopWaiting: signals.first,
        stopJob: stopJob.signal,
        tlsLabels: tls.labels,
        systemId,
        onJobStarted: (build) => process.stderr.write(`Job ${build.id} (${build.name}) received; its log: ${jobLogLocation(build, runner.url)}\n`),
        onJobFinished: (buildId, outcome) => {
          tee?.end(buildId);
          process.stderr.write(`Job ${buildId} ${outcome.state === 'success' ? 'succeeded' : `failed: ${outcome.reason ?? ''}`}\n`);
        },
      });
      process.exitCode = exitCodeOf(result, { runner, waitTimeout, received: signals.received });
    } finally {
      signals.dispose();
    }
  },
};

/** Milliseconds of a duration flag (`60s`, `2m`, `1h30m`, a bare number is seconds), refused naming where it came from. */
function durationOf(key: 'wait-timeout' | 'poll-interval' | 'shutdown-timeout', text: string, argv: Record<string, unknown>): number {
  const ms = parseDurationMs(text);
  if (ms === undefined || ms < 0) throw new CommandError(EXIT.usage, `${flagLabel(RUN_ONCE_FLAGS, key, argv)}: "${text}" is not a duration; use e.g. 60s, 2m, 1h30m`);
  return ms;
}

/** 1 when a job failed, else 0; without jobs, why none ran. A refused or lost coordinator is an error either way. */
function exitCodeOf(result: RunJobsResult, context: { runner: RunnerConfig; waitTimeout: string; received: NodeJS.Signals | undefined }): number {
  const { jobs, ended } = result;
  if (jobs.length > 1) {
    const failed = jobs.filter((j) => j.outcome.state !== 'success').length;
    process.stderr.write(`${jobs.length} jobs: ${jobs.length - failed} succeeded, ${failed} failed\n`);
  }
  switch (ended.kind) {
    case 'forbidden':
      throw new CommandError(EXIT.coordinator, `the coordinator refused the runner token (${ended.status}); was the runner deleted? Register it again.`);
    case 'unreachable':
      throw new CommandError(EXIT.coordinator, `could not get a job from ${context.runner.url}: ${ended.error ?? `status ${ended.status}`}`);
    default:
      break;
  }
  if (jobs.length > 0) return jobs.every((j) => j.outcome.state === 'success') ? EXIT.ok : EXIT.jobFailed;
  if (ended.kind === 'stopped') return context.received === 'SIGINT' ? 130 : 143;
  process.stderr.write(`No job arrived within ${context.waitTimeout}\n`);
  return EXIT.noJob;
}

/** The `[[runners]]` entry named `name` of the config file (`run-single -c FILE -r NAME`). */
async function runnerFromConfig(configFlag: string | undefined, name: string): Promise<RunnerConfig> {
  const path = resolveConfigPath(configFlag);
  const { config } = await loadConfigWithWarnings(path, { permissions: 'warn' });
  const runner = config.runners.find((r) => r.name === name);
  if (!runner) throw new CommandError(EXIT.usage, `no runner named "${name}" in ${path} (it has ${config.runners.map((r) => `"${r.name}"`).join(', ') || 'none'})`);
  return runner;
}

/**
 * The runner entry `run-once` works as, from its flags and environment, validated by the same
 * schema as a config.toml entry (so `--docker-pull-policy` means what `pull_policy` means).
 */
export function runnerFromFlags(flags: Record<string, unknown>, env: NodeJS.ProcessEnv = process.env): RunnerConfig {
  const argv = resolveEnvOptions(flags, RUN_ONCE_FLAGS, env) as unknown as RunOnceValues;
  const { url, token } = argv;
  if (!url || !token) throw new CommandError(EXIT.usage, 'run-once needs --url and --token (the runner token printed by `ci-runner register`), or CI_SERVER_URL and CI_SERVER_TOKEN (or RUNNER_TOKEN)');
  const docker = argv.executor === 'docker' ? dockerTableFromFlags(flags, env) : {};
  const kubernetes = argv.executor === 'kubernetes' ? kubernetesTableFromFlags(flags, env) : {};
  const custom = argv.executor === 'custom' ? customTableFromFlags(flags, env) : {};
  const parsed = runnerSchema.safeParse({
    ...tlsFromFlags(flags, env).files,
    name: argv.name,
    url,
    api: argv.api,
    token,
    executor: argv.executor,
    shell: argv.shell,
    builds_dir: argv['builds-dir'],
    cache_dir: argv['cache-dir'],
    environment: argv.env ?? [],
    limit: argv.limit,
    request_concurrency: argv['request-concurrency'],
    output_limit: argv['output-limit'],
    artifacts_format: argv['artifacts-format'],
    docker,
    kubernetes,
    custom,
    ...(argv['artifacts-extract-limit'] !== undefined ? { artifacts_extract_limit: argv['artifacts-extract-limit'] } : {}),
    ...(argv['pre-clone-script'] ? { pre_get_sources_script: argv['pre-clone-script'] } : {}),
    ...(argv['pre-build-script'] ? { pre_build_script: argv['pre-build-script'] } : {}),
    ...(argv['post-build-script'] ? { post_build_script: argv['post-build-script'] } : {}),
  });
  if (!parsed.success) {
    const flag = (path: PropertyKey[]): string =>
      path[0] === 'docker' ? flagOfKey(String(path[1] ?? '')) : path[0] === 'kubernetes' ? kubernetesFlagOfPath(path.slice(1)) : path[0] === 'custom' ? customFlagOfKey(String(path[1] ?? ''), flags, env) : flagLabel(RUN_ONCE_FLAGS, String(path[0] ?? ''), flags, env);
    throw new CommandError(EXIT.usage, parsed.error.issues.map((i) => `${flag(i.path)}: ${i.message}`).join('\n'));
  }
  return parsed.data;
}
