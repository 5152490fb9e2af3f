/**
 * `ci-runner run-once`: take at most one job, run it, exit with its result. No config file; the flags
 * match GitLab Runner's `run-single`.
 */
import type { ArgumentsCamelCase, Argv, CommandModule } from 'yargs';
import { CommandError, EXIT, handleStopSignals, parseDuration } from '../../agent/cli-support.js';
import { runnerSchema, type RunnerConfig } from '../../agent/config/schema.js';
import { addDockerFlags, dockerTableFromFlags, flagOfKey } from '../../agent/docker-flags.js';
import { keepRunningOnUnhandledRejection } from '../../agent/last-resort.js';
import { addTlsFlags, checkTlsFlags, tlsFromFlags } from '../../agent/tls-flags.js';
import { setLongTimeout, type LongTimer } from '../../timers.js';

interface RunOnceArgs {
  url?: string;
  token?: string;
  name: string;
  executor: string;
  shell: string;
  'builds-dir': string;
  'cache-dir': string;
  'wait-timeout': string;
  'poll-interval': string;
  'shutdown-timeout': string;
  'output-limit': number;
  env: string[];
  'pre-build-script'?: string;
  'post-build-script'?: string;
  'pre-clone-script'?: string;
  'artifacts-format': string;
  'artifacts-extract-limit'?: string;
  'log-level': string;
  'tls-ca-file'?: string;
  'tls-cert-file'?: string;
  'tls-key-file'?: string;
  [dockerFlag: `docker-${string}`]: unknown;
}

export const runOnceCommand: CommandModule<object, RunOnceArgs> = {
  command: 'run-once',
  describe: 'Take at most one job, run it, and exit with its result (no config file)',
  builder: (y: Argv) =>
    addDockerFlags(addTlsFlags(y
      .option('url', { type: 'string', describe: 'Coordinator URL [env: CI_SERVER_URL]' })
      .option('token', { alias: 't', type: 'string', describe: 'Runner token (from register) [env: CI_SERVER_TOKEN]' })
      .option('name', { alias: 'n', type: 'string', default: 'run-once', describe: 'Runner name shown in the trace' })
      .option('executor', { type: 'string', default: 'shell', choices: ['shell', 'docker'], describe: 'Executor (docker: jobs in containers, see the --docker-* options)' })
      .option('shell', { type: 'string', default: 'bash', choices: ['bash', 'sh'], describe: 'Shell for job scripts' })
      .option('builds-dir', { type: 'string', default: 'builds', describe: 'Where sources are checked out' })
      .option('cache-dir', { type: 'string', default: 'cache', describe: 'Where caches are kept' })
      .option('wait-timeout', { type: 'string', default: '60s', describe: 'How long to wait for a job (e.g. 60s, 5m)' })
      .option('poll-interval', { type: 'string', default: '1s', describe: 'Pause between polls that find no job' })
      .option('shutdown-timeout', { type: 'string', default: '30s', describe: 'After SIGTERM/SIGINT, how long the job may still run' })
      .option('output-limit', { type: 'number', default: 4096, describe: 'Trace size cap in KiB' })
      .option('env', { type: 'string', array: true, default: [], describe: 'Extra job variable NAME=value (repeatable)' })
      .option('pre-clone-script', { type: 'string', describe: 'Commands run before the clone/fetch' })
      .option('pre-build-script', { type: 'string', describe: 'Commands run before the job script' })
      .option('post-build-script', { type: 'string', describe: 'Commands run after the job script' })
      .option('artifacts-format', { type: 'string', default: 'tar.gz', choices: ['tar.gz', 'zip'], describe: 'Archive format of uploaded artifacts' })
      .option('artifacts-extract-limit', { type: 'string', describe: 'Most bytes the job may extract from downloaded artifacts and its cache, e.g. 10GiB (default: no limit)' })
      .option('log-level', { type: 'string', default: 'warn', choices: ['trace', 'debug', 'info', 'warn', 'error', 'silent'] })))
      .epilogue(
        'Exit codes: 0 the job succeeded; 1 the job failed; 2 bad usage, an unusable TLS file, or --executor docker and the docker engine does not answer; 3 the coordinator refused the token or could not be reached; 4 no job arrived within --wait-timeout; 130/143 stopped by SIGINT/SIGTERM before a job arrived.',
      ) as unknown as Argv<RunOnceArgs>,
  handler: async (argv: ArgumentsCamelCase<RunOnceArgs>) => {
    const runner = runnerFromFlags(argv);
    const tls = tlsFromFlags(argv);
    // Before the first poll: an unusable file is exit 2 naming it, not a transport error per poll.
    checkTlsFlags(tls);
    const waitTimeoutMs = parseDuration(argv['wait-timeout'], 'wait-timeout');
    const pollIntervalMs = parseDuration(argv['poll-interval'], 'poll-interval');
    const shutdownMs = parseDuration(argv['shutdown-timeout'], 'shutdown-timeout');
    if (runner.executor === 'docker') {
      // Better to refuse at once than to take a job only to fail it.
      const { checkExecutor } = await import('../../agent/executor-check.js');
      const check = await checkExecutor(runner);
      if (!check.ok) throw new CommandError(EXIT.usage, `cannot run docker jobs: ${check.reason}`);
    }
    const [{ JobStop }, { runOnce }, { defaultServices }, { createLogger }] = await Promise.all([
      import('../../agent/job/run-job.js'),
      import('../../agent/run-once.js'),
      import('../../agent/services.js'),
      import('../../log.js'),
    ]);
    const logger = createLogger({ level: argv['log-level'] as 'warn' });
    keepRunningOnUnhandledRejection(logger);
    const stopJob = new AbortController();
    let timer: LongTimer | undefined;
    const signals = handleStopSignals(
      logger,
      () => {
        timer = setLongTimeout(() => stopJob.abort(new JobStop(`the runner is shutting down and the job did not finish within ${argv['shutdown-timeout']}`)), shutdownMs, { unref: true });
      },
      () => stopJob.abort(new JobStop('the runner was stopped (forced shutdown)')),
    );
    try {
      const result = await runOnce({
        runner,
        services: defaultServices(logger),
        waitTimeoutMs,
        pollIntervalMs,
        stopWaiting: signals.first,
        stopJob: stopJob.signal,
        tlsLabels: tls.labels,
      });
      switch (result.kind) {
        case 'job':
          process.stderr.write(`Job ${result.buildId} ${result.outcome.state === 'success' ? 'succeeded' : `failed: ${result.outcome.reason ?? ''}`}\n`);
          process.exitCode = result.outcome.state === 'success' ? EXIT.ok : EXIT.jobFailed;
          break;
        case 'no-job':
          process.stderr.write(`No job arrived within ${argv['wait-timeout']}\n`);
          process.exitCode = EXIT.noJob;
          break;
        case 'forbidden':
          throw new CommandError(EXIT.coordinator, `the coordinator refused the runner token (${result.status}); was the runner deleted? Register it again.`);
        case 'unreachable':
          throw new CommandError(EXIT.coordinator, `could not get a job from ${runner.url}: ${result.error ?? `status ${result.status}`}`);
        case 'stopped':
          process.exitCode = signals.received === 'SIGINT' ? 130 : 143;
          break;
      }
    } finally {
      timer?.clear();
      signals.dispose();
    }
  },
};

/**
 * The runner entry `run-once` works as, from its flags and environment, validated by the same
 * schema as a config.toml entry (so `--docker-pull-policy` means what `pull_policy` means).
 */
export function runnerFromFlags(argv: Omit<RunOnceArgs, 'log-level' | 'wait-timeout' | 'poll-interval' | 'shutdown-timeout'> & Record<string, unknown>, env: NodeJS.ProcessEnv = process.env): RunnerConfig {
  const url = argv.url ?? env.CI_SERVER_URL;
  const token = argv.token ?? env.CI_SERVER_TOKEN;
  if (!url || !token) throw new CommandError(EXIT.usage, 'run-once needs --url and --token (the runner token printed by `ci-runner register`)');
  const docker = argv.executor === 'docker' ? dockerTableFromFlags(argv, env) : {};
  const parsed = runnerSchema.safeParse({
    ...tlsFromFlags(argv, env).files,
    name: argv.name,
    url,
    token,
    executor: argv.executor,
    shell: argv.shell,
    builds_dir: argv['builds-dir'],
    cache_dir: argv['cache-dir'],
    environment: argv.env,
    output_limit: argv['output-limit'],
    artifacts_format: argv['artifacts-format'],
    docker,
    ...(argv['artifacts-extract-limit'] !== undefined ? { artifacts_extract_limit: argv['artifacts-extract-limit'] } : {}),
    ...(argv['pre-clone-script'] ? { pre_clone_script: argv['pre-clone-script'] } : {}),
    ...(argv['pre-build-script'] ? { pre_build_script: argv['pre-build-script'] } : {}),
    ...(argv['post-build-script'] ? { post_build_script: argv['post-build-script'] } : {}),
  });
  if (!parsed.success) {
    const flag = (path: PropertyKey[]): string => (path[0] === 'docker' ? flagOfKey(String(path[1] ?? '')) : `--${String(path[0] ?? '').replace(/_/g, '-')}`);
    throw new CommandError(EXIT.usage, parsed.error.issues.map((i) => `${flag(i.path)}: ${i.message}`).join('\n'));
  }
  return parsed.data;
}
