/**
 * `register`'s flags with GitLab Runner's names, short forms and environment names (`-n` is
 * `--non-interactive`, as there; the runner's name is `--name` or `--description`). The `--docker-*`
 * flags come from agent/docker-flags.ts, the TLS ones are declared with the command.
 */
import type { EnvFlag } from '../env-options.js';

export const REGISTER_FLAGS: readonly EnvFlag[] = [
  { flag: 'config', alias: 'c', env: ['CONFIG_FILE'], kind: 'string', describe: 'Config file (default: /etc/ci-runner/config.toml as root, ~/.ci-runner/config.toml otherwise)' },
  { flag: 'non-interactive', alias: 'n', env: ['REGISTER_NON_INTERACTIVE'], kind: 'boolean', describe: 'Never prompt: a missing value is an error' },
  { flag: 'url', alias: 'u', env: ['CI_SERVER_URL'], kind: 'string', describe: 'Coordinator URL' },
  { flag: 'registration-token', alias: 'r', env: ['REGISTRATION_TOKEN'], kind: 'string', describe: 'Registration token' },
  { flag: 'token', alias: 't', env: ['CI_SERVER_TOKEN'], kind: 'string', describe: 'Instead of registering: the token of a runner that exists on the coordinator, verified and added as it is (tags and locking stay as they are there)' },
  { flag: 'name', alias: 'description', env: ['RUNNER_NAME'], kind: 'string', describe: 'Runner name/description (default: host name)' },
  { flag: 'tag-list', env: ['RUNNER_TAG_LIST'], kind: 'string', describe: 'Comma-separated tags' },
  { flag: 'run-untagged', env: ['REGISTER_RUN_UNTAGGED'], kind: 'boolean', describe: 'Take jobs without tags (forced on when there are no tags)' },
  { flag: 'locked', env: ['REGISTER_LOCKED'], kind: 'boolean', describe: 'Lock the runner to its project' },
  { flag: 'leave-runner', env: ['REGISTER_LEAVE_RUNNER'], kind: 'boolean', describe: 'Keep the runner registered when config.toml cannot be written (its token is printed instead)' },
  { flag: 'executor', env: ['RUNNER_EXECUTOR'], kind: 'string', choices: ['shell', 'docker'], describe: 'Executor (default: shell)' },
  { flag: 'shell', env: ['RUNNER_SHELL'], kind: 'string', choices: ['bash', 'sh'], describe: 'Shell for job scripts' },
  { flag: 'builds-dir', env: ['RUNNER_BUILDS_DIR'], kind: 'string', describe: 'Where sources are checked out' },
  { flag: 'cache-dir', env: ['RUNNER_CACHE_DIR'], kind: 'string', describe: 'Where caches are kept' },
  { flag: 'limit', env: ['RUNNER_LIMIT'], kind: 'int', min: 0, describe: 'Most jobs of this runner at once, 0 = no limit' },
  { flag: 'request-concurrency', env: ['RUNNER_REQUEST_CONCURRENCY'], kind: 'int', min: 0, describe: 'Job requests of this runner at once (0 = the default, 1)' },
  { flag: 'output-limit', env: ['RUNNER_OUTPUT_LIMIT'], kind: 'int', min: 0, describe: 'Trace size cap in KiB' },
  { flag: 'env', env: ['RUNNER_ENV'], kind: 'list', describe: 'Job variable NAME=value for every job (repeatable; in the environment one per line)' },
  { flag: 'pre-clone-script', env: ['RUNNER_PRE_CLONE_SCRIPT'], kind: 'string', describe: 'Commands run before the clone/fetch of each job' },
  { flag: 'pre-build-script', env: ['RUNNER_PRE_BUILD_SCRIPT'], kind: 'string', describe: 'Commands run before each job\'s script' },
  { flag: 'post-build-script', env: ['RUNNER_POST_BUILD_SCRIPT'], kind: 'string', describe: 'Commands run after each job\'s script' },
];

/** `register`'s values once the environment has filled in what the flags left out. */
export interface RegisterValues {
  config?: string;
  'non-interactive'?: boolean;
  url?: string;
  'registration-token'?: string;
  token?: string;
  name?: string;
  'tag-list'?: string;
  'run-untagged'?: boolean;
  locked?: boolean;
  'leave-runner'?: boolean;
  executor?: string;
  shell?: string;
  'builds-dir'?: string;
  'cache-dir'?: string;
  limit?: number;
  'request-concurrency'?: number;
  'output-limit'?: number;
  env?: string[];
  'pre-clone-script'?: string;
  'pre-build-script'?: string;
  'post-build-script'?: string;
}
