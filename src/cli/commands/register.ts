/**
 * `ci-runner register`: E1 with a registration token, then a new `[[runners]]` entry in config.toml
 * (mode 0600). Values come from flags, then environment variables (GitLab Runner's names), then —
 * at a terminal without --non-interactive — prompts.
 */
import { hostname } from 'node:os';
import type { ArgumentsCamelCase, Argv, CommandModule } from 'yargs';
import { CommandError, EXIT } from '../../agent/cli-support.js';
import { appendRunner, resolveConfigPath } from '../../agent/config/index.js';
import { ConfigError } from '../../agent/config/errors.js';
import { readOrEmpty } from '../../agent/config/write.js';
import { dockerSchema } from '../../agent/config/docker-schema.js';
import { addDockerFlags, dockerTableFromFlags, flagOfKey } from '../../agent/docker-flags.js';
import { interactive, Prompter } from '../../agent/prompt.js';
import { addTlsFlags, checkTlsFlags, tlsFromFlags } from '../../agent/tls-flags.js';
import { RunnerApiClient } from '../../client/runner-api.js';

interface RegisterArgs {
  config?: string;
  url?: string;
  'registration-token'?: string;
  name?: string;
  'tag-list'?: string;
  'run-untagged'?: boolean;
  locked?: boolean;
  executor?: string;
  shell?: string;
  'builds-dir'?: string;
  'cache-dir'?: string;
  limit?: number;
  'output-limit'?: number;
  'tls-ca-file'?: string;
  'tls-cert-file'?: string;
  'tls-key-file'?: string;
  env?: string[];
  'non-interactive': boolean;
  [dockerFlag: `docker-${string}`]: unknown;
}

const env = process.env;
const bool = (value: string | undefined): boolean | undefined => (value === undefined || value === '' ? undefined : /^(1|true|yes|on)$/i.test(value));
const num = (value: string | undefined): number | undefined => (value === undefined || value === '' ? undefined : Number(value));

export const registerCommand: CommandModule<object, RegisterArgs> = {
  command: 'register',
  describe: 'Register this runner with a coordinator and add it to config.toml',
  builder: (y: Argv) =>
    addDockerFlags(addTlsFlags(y
      .option('config', { alias: 'c', type: 'string', describe: 'Config file [env: CONFIG_FILE] (default: /etc/ci-runner/config.toml as root, ~/.ci-runner/config.toml otherwise)' })
      .option('url', { alias: 'u', type: 'string', describe: 'Coordinator URL [env: CI_SERVER_URL]' })
      .option('registration-token', { alias: 'r', type: 'string', describe: 'Registration token [env: REGISTRATION_TOKEN]' })
      .option('name', { alias: ['n', 'description'], type: 'string', describe: 'Runner name/description [env: RUNNER_NAME] (default: host name)' })
      .option('tag-list', { type: 'string', describe: 'Comma-separated tags [env: RUNNER_TAG_LIST]' })
      .option('run-untagged', { type: 'boolean', describe: 'Take jobs without tags (forced on when there are no tags) [env: REGISTER_RUN_UNTAGGED]' })
      .option('locked', { type: 'boolean', describe: 'Lock the runner to its project [env: REGISTER_LOCKED]' })
      .option('executor', { type: 'string', choices: ['shell', 'docker'], describe: 'Executor [env: RUNNER_EXECUTOR] (default: shell)' })
      .option('shell', { type: 'string', choices: ['bash', 'sh'], describe: 'Shell for job scripts [env: RUNNER_SHELL]' })
      .option('builds-dir', { type: 'string', describe: 'Where sources are checked out [env: RUNNER_BUILDS_DIR]' })
      .option('cache-dir', { type: 'string', describe: 'Where caches are kept [env: RUNNER_CACHE_DIR]' })
      .option('limit', { type: 'number', describe: 'Most jobs of this runner at once, 0 = no limit [env: RUNNER_LIMIT]' })
      .option('output-limit', { type: 'number', describe: 'Trace size cap in KiB [env: RUNNER_OUTPUT_LIMIT]' })
      .option('env', { type: 'string', array: true, describe: 'Job variable NAME=value for every job (repeatable)' })
      .option('non-interactive', { alias: 'n-i', type: 'boolean', default: false, describe: 'Never prompt [env: REGISTER_NON_INTERACTIVE]' }), { note: ' (written to config.toml)' }))
      .epilogue('Exit codes: 0 registered; 2 missing values, a bad flag value, bad config or an unusable TLS file; 3 the coordinator refused the registration token or could not be reached.') as unknown as Argv<RegisterArgs>,
  handler: async (argv: ArgumentsCamelCase<RegisterArgs>) => {
    const configPath = resolveConfigPath(argv.config);
    // Unusable TLS files are found before any prompt and before the coordinator is asked anything.
    const tls = tlsFromFlags(argv);
    const tlsMaterial = checkTlsFlags(tls);
    let url = argv.url ?? env.CI_SERVER_URL;
    let token = argv['registration-token'] ?? env.REGISTRATION_TOKEN;
    let name = argv.name ?? env.RUNNER_NAME;
    let tags = argv['tag-list'] ?? env.RUNNER_TAG_LIST;
    let executor = argv.executor ?? env.RUNNER_EXECUTOR;
    const docker = dockerTableFromFlags(argv);
    const prompt = !argv['non-interactive'] && !bool(env.REGISTER_NON_INTERACTIVE) && interactive();
    if (prompt) {
      const prompter = new Prompter();
      try {
        url ||= await prompter.ask({ text: 'Please enter the coordinator URL (e.g. https://ci.example.com/)' });
        token ||= await prompter.ask({ text: 'Please enter the registration token' });
        name ||= await prompter.ask({ text: 'Please enter a description for the runner', default: hostname() });
        tags ??= await prompter.ask({ text: 'Please enter the tags for this runner (comma separated)', default: '' });
        executor ||= await prompter.ask({ text: 'Please enter the executor: shell, docker', default: 'shell' });
        // Required, as in GitLab Runner: asked again until answered.
        while (executor === 'docker' && !docker.image) {
          docker.image = await prompter.ask({ text: 'Please enter the default Docker image (e.g. alpine:3.20)' });
        }
      } finally {
        prompter.close();
      }
    }
    if (!url) throw new CommandError(EXIT.usage, 'register needs the coordinator URL: --url or CI_SERVER_URL');
    if (!token) throw new CommandError(EXIT.usage, 'register needs a registration token: --registration-token or REGISTRATION_TOKEN');
    executor ||= 'shell';
    if (executor !== 'shell' && executor !== 'docker') throw new CommandError(EXIT.usage, `executor "${executor}" is not available; use shell or docker`);
    if (executor === 'docker') checkDockerTable(docker);
    name ||= hostname();
    const tagList = (tags ?? '').split(',').map((t) => t.trim()).filter((t) => t !== '');
    // A runner without tags that may not take untagged jobs could never run anything.
    const runUntagged = tagList.length === 0 ? true : (argv['run-untagged'] ?? bool(env.REGISTER_RUN_UNTAGGED) ?? false);
    const locked = argv.locked ?? bool(env.REGISTER_LOCKED);

    // A config that cannot be used is found before the coordinator creates a runner for it.
    await readOrEmpty(configPath).catch((error: unknown) => {
      throw new CommandError(EXIT.usage, error instanceof ConfigError ? error.message : `cannot read ${configPath}: ${(error as Error).message}`);
    });
    let client: RunnerApiClient;
    try {
      client = new RunnerApiClient({ url, tls: tlsMaterial });
    } catch (error) {
      throw new CommandError(EXIT.usage, `--url ${url}: ${(error as Error).message}`);
    }
    try {
      const result = await client.registerRunner({ token, description: name, tagList, runUntagged, ...(locked !== undefined ? { locked } : {}) });
      if (!result.runner) {
        if (result.status === 403) throw new CommandError(EXIT.coordinator, `the coordinator refused the registration token (403); check it in the project's or instance's CI settings`);
        const detail = result.error ? result.error.message : `status ${result.status}`;
        throw new CommandError(EXIT.coordinator, `registering at ${url} failed: ${detail}`);
      }
      try {
        await appendRunner(configPath, {
          name,
          url,
          token: result.runner.token,
          executor,
          shell: argv.shell ?? env.RUNNER_SHELL,
          builds_dir: argv['builds-dir'] ?? env.RUNNER_BUILDS_DIR,
          cache_dir: argv['cache-dir'] ?? env.RUNNER_CACHE_DIR,
          limit: argv.limit ?? num(env.RUNNER_LIMIT),
          output_limit: argv['output-limit'] ?? num(env.RUNNER_OUTPUT_LIMIT),
          ...tls.files,
          environment: argv.env && argv.env.length > 0 ? argv.env : undefined,
          ...(executor === 'docker' ? { docker } : {}),
        });
      } catch (error) {
        // Do not leave a runner on the server that no config knows about.
        await client.deleteRunner(result.runner.token).catch(() => undefined);
        throw new CommandError(EXIT.usage, `cannot write ${configPath}: ${(error as Error).message}; the runner was unregistered again`);
      }
      process.stdout.write(`Runner "${name}" registered (id ${result.runner.id}, token ${result.runner.token.slice(0, 8)}...) and added to ${configPath}\n`);
      process.stdout.write(`A running \`ci-runner run\` using ${configPath} picks it up within seconds (it watches the file); otherwise start one with \`ci-runner run -c ${configPath}\`\n`);
    } finally {
      await client.close();
    }
  },
};

/** Refuses, before anything is registered, a docker table the config loader would refuse later. */
function checkDockerTable(docker: Record<string, unknown>): void {
  if (!docker.image) {
    throw new CommandError(EXIT.usage, 'register --executor docker needs a default image for jobs that name none: --docker-image or DOCKER_IMAGE');
  }
  const parsed = dockerSchema.safeParse(docker);
  if (!parsed.success) {
    throw new CommandError(EXIT.usage, parsed.error.issues.map((i) => `${flagOfKey(String(i.path[0] ?? ''))}: ${i.message}`).join('\n'));
  }
}
