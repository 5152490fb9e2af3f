/**
 * `register`'s flags with GitLab Runner's names, short forms and environment names (`-n` is
 * `--non-interactive`, as there; the runner's name is `--name` or `--description`). The `--docker-*`
 * flags come from cli/docker-flags.ts, the TLS ones are declared with the command.
 */
import { CommandError, EXIT } from '../support.js';
import type { EnvFlag } from '../env-options.js';
import { OUR_EXECUTORS } from '../../agent/config/runner-schema.js';

const GROUP = 'Settings of the runner on the server (registration tokens only; a glrt- runner has them in GitLab):';

export const REGISTER_FLAGS: readonly EnvFlag[] = [
  { flag: 'config', alias: 'c', env: ['CONFIG_FILE'], kind: 'string', describe: 'Config file (default: /etc/ci-runner/config.toml as root, ~/.ci-runner/config.toml otherwise)' },
  { flag: 'non-interactive', alias: 'n', env: ['REGISTER_NON_INTERACTIVE'], kind: 'boolean', describe: 'Never prompt: a missing value is an error' },
  { flag: 'url', alias: 'u', env: ['CI_SERVER_URL'], kind: 'string', describe: 'Coordinator URL (e.g. https://gitlab.example.com/)' },
  { flag: 'api', env: ['RUNNER_API'], kind: 'string', choices: ['auto', 'v4', 'v1'], describe: 'Runner API: v4 (/api/v4, GitLab 9.0 and later), v1 (/ci/api/v1, GitLab 8.x) or auto (ask the server; the default). Written to the entry only when given' },
  { flag: 'registration-token', alias: 'r', env: ['REGISTRATION_TOKEN'], kind: 'string', describe: 'Registration token (legacy flow; GitLab 17+ may have it disabled: create the runner there and use --token glrt-...)' },
  { flag: 'token', alias: 't', env: ['CI_SERVER_TOKEN'], kind: 'string', describe: 'Instead of registering: the token of a runner that exists on the coordinator, verified and added as it is. A glrt- token (a runner created in GitLab, v4) is verified with this host\'s system id; its tags, locking and limits are set in GitLab' },
  { flag: 'name', alias: 'description', env: ['RUNNER_NAME'], kind: 'string', describe: 'Runner name/description (default: host name)' },
  { flag: 'tag-list', env: ['RUNNER_TAG_LIST'], kind: 'string', describe: 'Comma-separated tags' },
  { flag: 'run-untagged', env: ['REGISTER_RUN_UNTAGGED'], kind: 'boolean', describe: 'Take jobs without tags (forced on when there are no tags)' },
  { flag: 'locked', env: ['REGISTER_LOCKED'], kind: 'boolean', describe: 'Lock the runner to its project' },
  { flag: 'leave-runner', env: ['REGISTER_LEAVE_RUNNER'], kind: 'boolean', describe: 'Keep the runner registered when config.toml cannot be written (its token is printed instead)' },
  { flag: 'executor', env: ['RUNNER_EXECUTOR'], kind: 'string', choices: OUR_EXECUTORS, describe: 'Executor (default: shell; custom: see the --custom-* options)' },
  { flag: 'custom_build_dir-enabled', env: ['CUSTOM_BUILD_DIR_ENABLED'], kind: 'boolean', describe: '[runners.custom_build_dir] enabled: jobs may choose their directory under builds_dir with GIT_CLONE_PATH' },
  { flag: 'shell', env: ['RUNNER_SHELL'], kind: 'string', choices: ['bash', 'sh'], describe: 'Shell for job scripts' },
  { flag: 'builds-dir', env: ['RUNNER_BUILDS_DIR'], kind: 'string', describe: 'Where sources are checked out' },
  { flag: 'cache-dir', env: ['RUNNER_CACHE_DIR'], kind: 'string', describe: 'Where caches are kept' },
  { flag: 'limit', env: ['RUNNER_LIMIT'], kind: 'int', min: 0, describe: 'Most jobs of this runner at once, 0 = no limit' },
  { flag: 'request-concurrency', env: ['RUNNER_REQUEST_CONCURRENCY'], kind: 'int', min: 0, describe: 'Job requests of this runner at once (0 = the default, 1)' },
  { flag: 'output-limit', env: ['RUNNER_OUTPUT_LIMIT'], kind: 'int', min: 0, describe: 'Trace size cap in KiB' },
  { flag: 'env', env: ['RUNNER_ENV'], kind: 'list', describe: 'Job variable NAME=value for every job (repeatable; in the environment one per line)' },
  { flag: 'pre-clone-script', env: ['RUNNER_PRE_CLONE_SCRIPT'], kind: 'string', describe: 'Commands run before the clone/fetch of each job' },
  { flag: 'pre-build-script', env: ['RUNNER_PRE_BUILD_SCRIPT'], kind: 'string', describe: 'Commands run before each job\'s script' },
  { flag: 'template-config', env: ['TEMPLATE_CONFIG_FILE'], kind: 'string', describe: 'A config.toml with one [[runners]] entry whose keys fill in what the flags and environment leave unset (as GitLab Runner; its token is not used)' },
  { flag: 'post-build-script', env: ['RUNNER_POST_BUILD_SCRIPT'], kind: 'string', describe: 'Commands run after each job\'s script' },
  // Sent over v4; over v1 accepted only where the value is what the v1 API does anyway.
  { flag: 'access-level', env: ['REGISTER_ACCESS_LEVEL'], kind: 'string', choices: ['not_protected', 'ref_protected'], describe: 'ref_protected: jobs of protected refs only (v4; over v1 only not_protected)', group: GROUP },
  { flag: 'paused', env: ['REGISTER_PAUSED'], kind: 'boolean', describe: 'Register the runner paused (v4; over v1 only false)', group: GROUP },
  { flag: 'maximum-timeout', env: ['REGISTER_MAXIMUM_TIMEOUT'], kind: 'int', min: 0, describe: 'Cap of the runner\'s job timeout in seconds (v4; over v1 only 0, none)', group: GROUP },
  { flag: 'maintenance-note', env: ['REGISTER_MAINTENANCE_NOTE'], kind: 'string', describe: 'Free-form note for the server\'s administrators (v4; over v1 not sent, a warning says so)', group: GROUP },
];

/**
 * Over v1 only: GitLab Runner flags the v1 registration API cannot carry: a value that is what v1
 * does anyway is accepted (so GitLab Runner's command lines work unchanged), any other is refused,
 * since the runner would not be what was asked for; a maintenance note only costs a warning.
 * Returns the warnings.
 */
export function checkV4OnlyValues(values: RegisterValues): string[] {
  const refuse = (what: string): never => {
    throw new CommandError(EXIT.usage, `${what}; the v1 runner API cannot register it so. Leave the flag out (or set it on the coordinator after registering).`);
  };
  if (values['access-level'] === 'ref_protected') refuse('--access-level ref_protected restricts the runner to protected refs');
  if (values.paused === true) refuse('--paused registers a paused runner');
  if (values['maximum-timeout'] !== undefined && values['maximum-timeout'] > 0) refuse(`--maximum-timeout ${values['maximum-timeout']} caps the runner's job timeout`);
  return values['maintenance-note'] ? ['--maintenance-note is not sent: the v1 runner API has no maintenance note'] : [];
}

/**
 * A runner created on the server (`glrt-` token) has its settings there, as in GitLab Runner 19:
 * flags that would set them are refused with `--token`, and ignored with a warning when the token
 * came through the legacy `--registration-token` (GitLab Runner's "legacy-compatible registration").
 * Returns the warnings; throws for `--token`.
 */
export function createdRunnerWarnings(values: RegisterValues, viaRegistrationToken = false): string[] {
  const given = (['tag-list', 'run-untagged', 'locked', 'access-level', 'maximum-timeout', 'paused', 'maintenance-note'] as const).filter((flag) => {
    const value = values[flag];
    // GitLab Runner's defaults (locked true, the others unset or false) are not a setting.
    if (flag === 'locked') return value === false;
    return value !== undefined && value !== '' && value !== false && value !== 0;
  });
  if (given.length === 0) return [];
  const list = `--${given.join(', --')}`;
  if (!viaRegistrationToken) {
    throw new CommandError(
      EXIT.usage,
      `${list}: runner configuration other than name and executor configuration is reserved (--locked, --access-level, --run-untagged, --maximum-timeout, --paused, --tag-list and --maintenance-note) and cannot be given when registering with a runner authentication token (glrt-); set it on the runner's page in GitLab and try again without it`,
    );
  }
  return [`an authentication token (glrt-) was given as --registration-token: it is taken into use as one (legacy-compatible registration), and ${list} ${given.length === 1 ? 'is' : 'are'} ignored; set ${given.length === 1 ? 'it' : 'them'} on the runner's page in GitLab`];
}

/** `register`'s values once the environment has filled in what the flags left out. */
export interface RegisterValues {
  config?: string;
  'non-interactive'?: boolean;
  url?: string;
  api?: string;
  'registration-token'?: string;
  token?: string;
  name?: string;
  'tag-list'?: string;
  'run-untagged'?: boolean;
  locked?: boolean;
  'leave-runner'?: boolean;
  executor?: string;
  'custom_build_dir-enabled'?: boolean;
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
  'template-config'?: string;
  'access-level'?: string;
  paused?: boolean;
  'maximum-timeout'?: number;
  'maintenance-note'?: string;
}
