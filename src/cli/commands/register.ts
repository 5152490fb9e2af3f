/**
 * `ci-runner register`: a new `[[runners]]` entry in config.toml (mode 0600) for a runner registered
 * with a registration token, or one that exists on the coordinator already (`--token`, a `glrt-`
 * token of a runner created in GitLab among them); register-flow.ts talks to the coordinator. Values
 * come from flags, then environment variables (GitLab Runner's names), then — at a terminal without
 * -n/--non-interactive — prompts.
 */
import { hostname } from 'node:os';
import { parse } from 'smol-toml';
import type { ArgumentsCamelCase, Argv, CommandModule } from 'yargs';
import { CommandError, EXIT } from '../support.js';
import { appendRunner, resolveConfigPath, runnerSchema, type NewRunnerEntry } from '../../agent/config/index.js';
import { ConfigError } from '../../agent/config/errors.js';
import { readOrEmpty } from '../../agent/config/write.js';
import { CACHE_KEYS, cacheSchema } from '../../agent/config/cache-schema.js';
import { checkKeys, type KeyFindings } from '../../agent/config/key-check.js';
import { dockerSchema } from '../../agent/config/docker-schema.js';
import { addCacheFlags, cacheFlagOfPath, cacheTableFromFlags } from '../cache-flags.js';
import { addDockerFlags, dockerTableFromFlags, flagOfKey } from '../docker-flags.js';
import { addKubernetesFlags, kubernetesFlagOfPath, kubernetesTableFromFlags } from '../kubernetes-flags.js';
import { addCustomFlags, customFlagOfKey, customTableFromFlags } from '../custom-flags.js';
import { customSchema } from '../../agent/config/custom-schema.js';
import { OUR_EXECUTORS } from '../../agent/config/runner-schema.js';
import { KUBERNETES_KEYS, kubernetesSchema } from '../../agent/config/kubernetes-schema.js';
import { interactive, Prompter } from '../prompt.js';
import { addTlsFlags, checkTlsFlags, tlsFromFlags } from '../tls-flags.js';
import type { TlsFiles } from '../../client/tls.js';
import { addEnvOptions, checkFlagSupport, flagLabel, resolveEnvOptions } from '../env-options.js';
import { REGISTER_COMPAT_FLAGS } from './register-compat.js';
import { REGISTER_FLAGS, type RegisterValues } from './register-options.js';
import { checkMergedEntry, mergeUnder, readTemplate } from './register-template.js';
import { isTable } from '../../agent/config/key-check.js';
import { CREATED_RUNNER_PREFIX, registerWithCoordinator } from './register-flow.js';

interface RegisterArgs extends RegisterValues {
  'tls-ca-file'?: string;
  'tls-cert-file'?: string;
  'tls-key-file'?: string;
  [dockerFlag: `docker-${string}`]: unknown;
  [cacheFlag: `cache-${string}`]: unknown;
  [kubernetesFlag: `kubernetes-${string}`]: unknown;
  [customFlag: `custom-${string}`]: unknown;
}


export const registerCommand: CommandModule<object, RegisterArgs> = {
  command: 'register',
  describe: 'Register this runner with a coordinator and add it to config.toml',
  builder: (y: Argv) =>
    addCustomFlags(addKubernetesFlags(addCacheFlags(addDockerFlags(addTlsFlags(addEnvOptions(addEnvOptions(y, REGISTER_FLAGS), REGISTER_COMPAT_FLAGS), { note: ' (written to config.toml)' })))))
      .example('$0 register -n --url https://gitlab.example.com/ --token glrt-XXXX --executor shell', 'Take a runner created in GitLab (Settings > CI/CD > Runners > New runner) into use')
      .example('$0 register -n --url https://ci.example.com/ -r TOKEN --executor docker --docker-image alpine:3.20', 'Register with a registration token, without prompts (as `gitlab-runner register -n ...`)')
      .example('$0 register -n --url https://gitlab.example.com/ --token glrt-XXXX --executor kubernetes --kubernetes-namespace ci --kubernetes-image alpine:3.20 --kubernetes-node-selector kubernetes.io/arch:amd64', 'A kubernetes runner: each job a pod in namespace ci (the cluster: the pod\'s service account, KUBECONFIG or --kubernetes-host)')
      .example('$0 register -n --url https://gitlab.example.com/ --token glrt-XXXX --executor custom --custom-config-exec /opt/driver/config.sh --custom-prepare-exec /opt/driver/prepare.sh --custom-run-exec /opt/driver/run.sh --custom-cleanup-exec /opt/driver/cleanup.sh', 'A custom executor runner: each job through the four driver programs (docs/executors/custom.md)')
      .example('$0 register -n --url https://gitlab.example.com/ --token glrt-XXXX --cache-type s3 --cache-shared --cache-s3-bucket-name runner-cache --cache-s3-bucket-location eu-west-1', 'With a cache in S3 shared by the runners (credentials: CACHE_S3_ACCESS_KEY, CACHE_S3_SECRET_KEY, or the machine\'s IAM role)')
      .epilogue('Values come from flags, then the environment names shown, then the [[runners]] entry of --template-config (merged as GitLab Runner merges it: a false, 0 or empty value given does not override it), then (at a terminal, without -n) prompts.\nGitLab Runner\'s other register flags (the --docker-* not shown, the --kubernetes-* of its helper container, …) are accepted with a warning saying why they are ignored; those of executors ci-runner lacks (--ssh-*, --machine-*, --parallels-*, --virtualbox-*) are refused (docs/migrating.md).\nThe API (/api/v4 or /ci/api/v1) is the one the server answers, unless --api says.\nExit codes: 0 registered; 2 missing values, a bad flag or environment value, an unusable TLS file, or a config that cannot be read or written (then the new runner is unregistered again, unless --leave-runner); 3 the coordinator refused the token or could not be reached.') as unknown as Argv<RegisterArgs>,
  handler: async (argv: ArgumentsCamelCase<RegisterArgs>) => {
    for (const warning of checkFlagSupport(argv, REGISTER_COMPAT_FLAGS)) process.stderr.write(`WARNING: ${warning}\n`);
    const values = resolveEnvOptions(argv, REGISTER_FLAGS) as RegisterValues;
    const template = values['template-config'] ? await readTemplate(values['template-config']) : undefined;
    // As GitLab Runner: the template is merged before any question, so what it says is not asked.
    if (template) fillFromTemplate(values, template.entry);
    const configPath = resolveConfigPath(values.config);
    // Unusable TLS files are found before any prompt and before the coordinator is asked anything.
    const tls = tlsFromFlags(argv);
    const tlsMaterial = checkTlsFlags(tls);
    const docker = dockerTableFromFlags(argv);
    const cache = cacheTableFromFlags(argv);
    const kubernetes = kubernetesTableFromFlags(argv);
    const custom = customTableFromFlags(argv);
    if (cache) checkCacheTable(cache);
    if (!values['non-interactive'] && interactive()) await askMissing(values, docker, templateImage(template?.entry));
    // As GitLab Runner 19: an authentication token (glrt-) given where a registration token goes is
    // verified and taken into use as one, with no legacy registration.
    const authAsRegistration = !values.token && values['registration-token']?.startsWith(CREATED_RUNNER_PREFIX) === true;
    if (authAsRegistration) {
      values.token = values['registration-token'];
      delete values['registration-token'];
    }
    const { url, 'registration-token': token, token: runnerToken } = values;
    if (!url) throw new CommandError(EXIT.usage, 'register needs the coordinator URL: --url or CI_SERVER_URL');
    if (!token && !runnerToken) throw new CommandError(EXIT.usage, 'register needs a registration token (--registration-token or REGISTRATION_TOKEN), or the token of a runner that exists already (--token or CI_SERVER_TOKEN)');
    const executor = values.executor || 'shell';
    if (!(OUR_EXECUTORS as readonly string[]).includes(executor)) throw new CommandError(EXIT.usage, `executor "${executor}" is not available; use ${OUR_EXECUTORS.join(', ')}`);
    if (executor === 'docker') checkDockerTable(docker, templateImage(template?.entry));
    if (executor === 'kubernetes') checkKubernetesTable(kubernetes);
    for (const warning of checkCustomTable(custom, executor, argv)) process.stderr.write(`WARNING: ${warning}\n`);
    for (const warning of otherExecutorFlags(executor, { docker, kubernetes })) process.stderr.write(`WARNING: ${warning}\n`);
    const name = values.name || hostname();
    const tagList = (values['tag-list'] ?? '').split(',').map((t) => t.trim()).filter((t) => t !== '');
    // A runner without tags that may not take untagged jobs could never run anything.
    const runUntagged = tagList.length === 0 ? true : (values['run-untagged'] ?? false);
    const locked = values.locked;
    const flagEntry = newEntry(values, { name, url, executor, tlsFiles: tls.files, docker, kubernetes, custom, ...(cache ? { cache } : {}) });
    checkEntry(flagEntry, argv);
    const entry = template ? (mergeUnder(flagEntry, template.entry) as NewRunnerEntry) : flagEntry;
    if (template) {
      process.stderr.write(`Merging configuration from template file "${template.path}"\n`);
      for (const warning of checkMergedEntry(template, entry)) process.stderr.write(`WARNING: ${warning}\n`);
    }

    // A config that cannot be used is found before the coordinator creates a runner for it.
    const existing = await readOrEmpty(configPath).catch((error: unknown) => {
      throw new CommandError(EXIT.usage, error instanceof ConfigError ? error.message : `cannot read ${configPath}: ${(error as Error).message}`);
    });
    warnAboveConcurrent(existing, entry);
    await registerWithCoordinator({ values, configPath, url, entry, tls: tlsMaterial, ...(token ? { registrationToken: token } : {}), ...(runnerToken ? { runnerToken } : {}), ...(authAsRegistration ? { runnerTokenViaRegistration: true } : {}), tagList, runUntagged, ...(locked !== undefined ? { locked } : {}) });
    process.stdout.write(`A running \`ci-runner run\` using ${configPath} picks it up within seconds (it watches the file); otherwise start one with \`ci-runner run -c ${configPath}\`\n`);
  },
};

/** The `[[runners]]` entry to write (its token is filled in once the coordinator has answered). */
function newEntry(values: RegisterValues, fixed: { name: string; url: string; executor: string; tlsFiles: TlsFiles; docker: Record<string, unknown>; kubernetes: Record<string, unknown>; custom: Record<string, unknown>; cache?: Record<string, unknown> }): NewRunnerEntry {
  return {
    name: fixed.name,
    url: fixed.url,
    ...(values.api && values.api !== 'auto' ? { api: values.api } : {}),
    token: '',
    executor: fixed.executor,
    shell: values.shell,
    builds_dir: values['builds-dir'],
    cache_dir: values['cache-dir'],
    limit: values.limit,
    output_limit: values['output-limit'],
    request_concurrency: values['request-concurrency'],
    ...fixed.tlsFiles,
    environment: values.env && values.env.length > 0 ? values.env : undefined,
    pre_get_sources_script: values['pre-clone-script'],
    pre_build_script: values['pre-build-script'],
    post_build_script: values['post-build-script'],
    ...(fixed.executor === 'docker' ? { docker: fixed.docker } : {}),
    ...(fixed.executor === 'kubernetes' ? { kubernetes: fixed.kubernetes } : {}),
    ...(fixed.executor === 'custom' ? { custom: fixed.custom } : {}),
    ...(values['custom_build_dir-enabled'] !== undefined ? { custom_build_dir: { enabled: values['custom_build_dir-enabled'] } } : {}),
    ...(fixed.cache ? { cache: fixed.cache } : {}),
  };
}

/** The template's url, name and executor, where flags and environment gave none (so nothing asks for them). */
function fillFromTemplate(values: RegisterValues, entry: Record<string, unknown>): void {
  const text = (key: string): string | undefined => (typeof entry[key] === 'string' && entry[key] !== '' ? entry[key] : undefined);
  values.url ||= text('url');
  values.name ||= text('name');
  values.executor ||= text('executor');
}

/** Whether a --template-config entry names the default docker image. */
function templateImage(entry: Record<string, unknown> | undefined): boolean {
  const docker = entry?.docker;
  return isTable(docker) && typeof docker.image === 'string' && docker.image !== '';
}

/** Prompts, at a terminal, for what flags and environment left out (GitLab Runner's questions). */
async function askMissing(values: RegisterValues, docker: Record<string, unknown>, imageInTemplate: boolean): Promise<void> {
  const prompter = new Prompter();
  try {
    values.url ||= await prompter.ask({ text: 'Please enter the coordinator URL (e.g. https://ci.example.com/)' });
    if (!values.token) values['registration-token'] ||= await prompter.ask({ text: 'Please enter the registration token' });
    values.name ||= await prompter.ask({ text: 'Please enter a description for the runner', default: hostname() });
    values['tag-list'] ??= await prompter.ask({ text: 'Please enter the tags for this runner (comma separated)', default: '' });
    values.executor ||= await prompter.ask({ text: `Please enter the executor: ${OUR_EXECUTORS.join(', ')}`, default: 'shell' });
    // Required, as in GitLab Runner: asked again until answered.
    while (values.executor === 'docker' && !docker.image && !imageInTemplate) {
      docker.image = await prompter.ask({ text: 'Please enter the default Docker image (e.g. alpine:3.20)' });
    }
  } finally {
    prompter.close();
  }
}

/** Refuses, before anything is registered, keys the config loader would refuse later. */
function checkEntry(entry: NewRunnerEntry, argv: Record<string, unknown>): void {
  const { docker: _docker, cache: _cache, kubernetes: _kubernetes, custom: _custom, custom_build_dir: _customBuildDir, ...keys } = entry;
  const parsed = runnerSchema.omit({ docker: true, cache: true, kubernetes: true, custom: true, custom_build_dir: true }).safeParse(Object.fromEntries(Object.entries({ ...keys, token: 'unregistered' }).filter(([, v]) => v !== undefined && v !== '')));
  if (!parsed.success) {
    throw new CommandError(EXIT.usage, parsed.error.issues.map((i) => `${flagLabel(REGISTER_FLAGS, String(i.path[0] ?? ''), argv)}: ${i.message}`).join('\n'));
  }
}

/** As GitLab Runner does: a limit above the global `concurrent` cannot be reached, and `register` does not raise it. */
function warnAboveConcurrent(configText: string, entry: NewRunnerEntry): void {
  let concurrent = 1;
  try {
    const value = (parse(configText) as { concurrent?: unknown }).concurrent;
    if (typeof value === 'number' && value > 0) concurrent = value;
  } catch {
    return; // The config loader reports a broken file with its line when the runner starts.
  }
  for (const [flag, value] of [['--limit', entry.limit], ['--request-concurrency', entry.request_concurrency]] as const) {
    if (value !== undefined && value > concurrent) {
      process.stderr.write(`WARNING: ${flag} ${value} is more than concurrent = ${concurrent} in config.toml, which caps the jobs of all runners together; raise concurrent for it to take effect\n`);
    }
  }
}

/** Refuses, before anything is registered, a docker table the config loader would refuse later. */
function checkDockerTable(docker: Record<string, unknown>, imageInTemplate: boolean): void {
  if (!docker.image && !imageInTemplate) {
    throw new CommandError(EXIT.usage, 'register --executor docker needs a default image for jobs that name none: --docker-image or DOCKER_IMAGE');
  }
  const parsed = dockerSchema.safeParse(docker);
  if (!parsed.success) {
    throw new CommandError(EXIT.usage, parsed.error.issues.map((i) => `${flagOfKey(String(i.path[0] ?? ''))}: ${i.message}`).join('\n'));
  }
}

/**
 * Refuses, before anything is registered, a `[runners.cache]` table from flags the config loader would
 * refuse later; prints the warnings it would give (a flag for a key ci-runner does not use).
 */
function checkCacheTable(cache: Record<string, unknown>): void {
  const copy = structuredClone(cache);
  const found = { warnings: [], problems: [], checked: new Set<string>() } as KeyFindings;
  checkKeys(copy, CACHE_KEYS, [], (path) => cacheFlagOfPath(path), found);
  for (const line of found.warnings) process.stderr.write(`WARNING: ${line}\n`);
  const parsed = cacheSchema.safeParse(copy);
  const problems = [...found.problems, ...(parsed.success ? [] : parsed.error.issues.map((i) => `${cacheFlagOfPath(i.path)}: ${i.message}`))];
  if (problems.length > 0) throw new CommandError(EXIT.usage, problems.join('\n'));
}

/**
 * Refuses, before anything is registered, a `[runners.kubernetes]` table from flags the config loader
 * would refuse later, naming the flag.
 */
function checkKubernetesTable(kubernetes: Record<string, unknown>): void {
  const found = { warnings: [], problems: [], checked: new Set<string>() } as KeyFindings;
  checkKeys(structuredClone(kubernetes), KUBERNETES_KEYS, [], (path) => kubernetesFlagOfPath(path), found);
  const parsed = kubernetesSchema.safeParse(kubernetes);
  const problems = [...found.problems, ...(parsed.success ? [] : parsed.error.issues.map((i) => `${kubernetesFlagOfPath(i.path)}: ${i.message}`))];
  if (problems.length > 0) throw new CommandError(EXIT.usage, problems.join('\n'));
}

/**
 * Refuses, before anything is registered, a `[runners.custom]` table from flags the config loader would
 * refuse later, naming the flag. Returns the warnings: `--custom-*` values with another executor are
 * not written (GitLab Runner drops them too), and a custom runner without run_exec is written as GitLab
 * Runner writes it, but would fail every job until run_exec is set.
 */
function checkCustomTable(custom: Record<string, unknown>, executor: string, argv: Record<string, unknown>): string[] {
  const label = (key: PropertyKey | undefined): string => customFlagOfKey(String(key ?? ''), argv);
  const given = Object.keys(custom);
  if (executor !== 'custom') return notWritten(given.map(label), executor, 'custom');
  const parsed = customSchema.safeParse(custom);
  if (!parsed.success) throw new CommandError(EXIT.usage, parsed.error.issues.map((i) => `${label(i.path[0])}: ${i.message}`).join('\n'));
  return parsed.data.run_exec === '' ? ['--custom-run-exec (CUSTOM_RUN_EXEC) is not set: every job of this runner fails until run_exec is set in its [runners.custom] table'] : [];
}

/**
 * `--docker-*` and `--kubernetes-*` values given with another executor: not written (GitLab Runner
 * drops them too, without a word), so each is named once.
 */
function otherExecutorFlags(executor: string, tables: { docker: Record<string, unknown>; kubernetes: Record<string, unknown> }): string[] {
  return [
    ...(executor === 'docker' ? [] : notWritten(Object.keys(tables.docker).map(flagOfKey), executor, 'docker')),
    ...(executor === 'kubernetes' ? [] : notWritten([...new Set(Object.keys(tables.kubernetes).map((key) => kubernetesFlagOfPath([key])))], executor, 'kubernetes')),
  ];
}

/** The one warning about flags of another executor's table that register does not write (none for none). */
function notWritten(flags: readonly string[], executor: string, tableOf: string): string[] {
  if (flags.length === 0) return [];
  return [`${flags.join(', ')} ${flags.length === 1 ? 'is' : 'are'} ignored: the executor is ${executor}, not ${tableOf}`];
}
