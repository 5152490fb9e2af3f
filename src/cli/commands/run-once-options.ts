/**
 * `run-once`'s flags (and `run-single`'s: the same command under GitLab Runner's name), each with
 * an environment name so an orchestrator can start it with the environment alone: GitLab Runner's
 * names where it has one (CI_SERVER_URL, RUNNER_EXECUTOR, ...), RUNNER_-prefixed ones for ours.
 */
import type { EnvFlag } from '../env-options.js';
import { OUR_EXECUTORS } from '../../agent/config/runner-schema.js';

export const RUN_ONCE_FLAGS: readonly EnvFlag[] = [
  { flag: 'config', alias: 'c', env: ['CONFIG_FILE'], kind: 'string', describe: 'Config file that --runner is read from (default: /etc/ci-runner/config.toml as root, ~/.ci-runner/config.toml otherwise)' },
  { flag: 'runner', alias: 'r', env: ['RUNNER_CONFIG_NAME'], kind: 'string', describe: 'Take the runner entry of this name from the config file instead of the flags below (GitLab Runner\'s run-single -r)' },
  { flag: 'url', alias: 'u', env: ['CI_SERVER_URL'], kind: 'string', describe: 'Coordinator URL' },
  { flag: 'token', alias: 't', env: ['CI_SERVER_TOKEN', 'RUNNER_TOKEN'], kind: 'string', describe: 'Runner token (from register)' },
  { flag: 'api', env: ['RUNNER_API'], kind: 'string', default: 'auto', choices: ['auto', 'v4', 'v1'], describe: 'Runner API: v4 (/api/v4, GitLab 9.0 and later), v1 (/ci/api/v1, GitLab 8.x) or auto (ask the server)' },
  { flag: 'name', alias: ['n', 'description'], env: ['RUNNER_NAME'], kind: 'string', default: 'run-once', describe: 'Runner name shown in the trace' },
  { flag: 'executor', env: ['RUNNER_EXECUTOR'], kind: 'string', default: 'shell', choices: OUR_EXECUTORS, describe: 'Executor (docker: jobs in containers, see the --docker-* options; kubernetes: jobs as pods, see the --kubernetes-* options; custom: jobs through driver programs, see the --custom-* options)' },
  { flag: 'shell', env: ['RUNNER_SHELL'], kind: 'string', default: 'bash', choices: ['bash', 'sh'], describe: 'Shell for job scripts' },
  { flag: 'builds-dir', env: ['RUNNER_BUILDS_DIR'], kind: 'string', default: 'builds', describe: 'Where sources are checked out' },
  { flag: 'cache-dir', env: ['RUNNER_CACHE_DIR'], kind: 'string', default: 'cache', describe: 'Where caches are kept' },
  { flag: 'max-builds', env: ['RUNNER_MAX_BUILDS'], kind: 'int', min: 0, describe: 'Jobs to run before exiting; 0 = no limit (default: 1; run-single: 0, as in GitLab Runner)' },
  { flag: 'limit', env: ['RUNNER_LIMIT'], kind: 'int', min: 0, default: 1, describe: 'Most jobs at once (0 means 1)' },
  { flag: 'request-concurrency', env: ['RUNNER_REQUEST_CONCURRENCY'], kind: 'int', min: 0, default: 1, describe: 'Most job requests at once (0 means 1)' },
  { flag: 'wait-timeout', env: ['RUNNER_WAIT_TIMEOUT'], kind: 'string', describe: 'Exit when no job has arrived for this long, counted from the start and from the end of each job (e.g. 60s, 5m; a bare number is seconds; 0 = wait without limit) (default: 60s; run-single: 0, as in GitLab Runner)' },
  { flag: 'poll-interval', env: ['RUNNER_POLL_INTERVAL'], kind: 'string', default: '1s', describe: 'Pause between polls that find no job' },
  { flag: 'shutdown-timeout', env: ['RUNNER_SHUTDOWN_TIMEOUT'], kind: 'string', default: '30s', describe: 'After SIGTERM/SIGINT, how long aborted jobs may take to report before the process exits anyway' },
  { flag: 'output-limit', env: ['RUNNER_OUTPUT_LIMIT'], kind: 'int', min: 0, default: 4096, describe: 'Trace size cap in KiB (0 means 4096)' },
  { flag: 'env', env: ['RUNNER_ENV'], kind: 'list', describe: 'Extra job variable NAME=value (repeatable; in the environment one per line)' },
  { flag: 'pre-clone-script', env: ['RUNNER_PRE_CLONE_SCRIPT'], kind: 'string', describe: 'Commands run before the clone/fetch' },
  { flag: 'pre-build-script', env: ['RUNNER_PRE_BUILD_SCRIPT'], kind: 'string', describe: 'Commands run before the job script' },
  { flag: 'post-build-script', env: ['RUNNER_POST_BUILD_SCRIPT'], kind: 'string', describe: 'Commands run after the job script' },
  { flag: 'artifacts-format', env: ['RUNNER_ARTIFACTS_FORMAT'], kind: 'string', default: 'tar.gz', choices: ['tar.gz', 'zip'], describe: 'Archive format of uploaded artifacts' },
  { flag: 'artifacts-extract-limit', env: ['RUNNER_ARTIFACTS_EXTRACT_LIMIT'], kind: 'string', describe: 'Most bytes a job may extract from downloaded artifacts and its cache, e.g. 10GiB (default: no limit)' },
  { flag: 'show-log', env: ['RUNNER_SHOW_LOG'], kind: 'boolean', describe: 'Also print each job\'s log (masked, as the coordinator gets it) on standard output as it runs' },
];

/** `run-once`'s values once the environment and the defaults have filled in what the flags left out. */
export interface RunOnceValues {
  config?: string;
  runner?: string;
  url?: string;
  token?: string;
  api: string;
  name: string;
  executor: string;
  shell: string;
  'builds-dir': string;
  'cache-dir': string;
  'max-builds'?: number;
  limit: number;
  'request-concurrency': number;
  'wait-timeout'?: string;
  'poll-interval': string;
  'shutdown-timeout': string;
  'output-limit': number;
  env?: string[];
  'pre-clone-script'?: string;
  'pre-build-script'?: string;
  'post-build-script'?: string;
  'artifacts-format': string;
  'artifacts-extract-limit'?: string;
  'show-log'?: boolean;
}
