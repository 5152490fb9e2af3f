/**
 * Validation of the V6 `201` body (docs/protocol-v4.md §6) and its mapping onto the runner's one job
 * model (`BuildPayload`, types.ts), so no executor, trace or artifact code knows which API a job came
 * by. What is accepted follows v1's rules (build-payload.ts):
 * - `null` anywhere means absent, unknown keys are ignored.
 * - What the runner needs and cannot guess — `id`, `token`, `job_info.name`, `job_info.project_id`,
 *   `git_info.repo_url`, `ref`, `sha` (≥ 8 chars) — refuses the job when absent; the message names it.
 * - What the runner acts on (`steps`, `variables`, `artifacts`, `cache`, `dependencies`, `hooks`) must have
 *   its documented types: a wrong one refuses the job, naming the key, since running it without them
 *   would not be what the user asked for. A step the runner does not implement (`release`, which it
 *   does not announce) refuses the job too.
 * - What only some executors use (`image`, `services`, `credentials`) never refuses a job: what
 *   cannot be read is dropped.
 * - What reaches git (`git_info.repo_url`, `sha`, `ref`, `refspecs`) must be an http(s) URL, a hex SHA,
 *   a valid ref name and refspecs of valid ref names: anything else refuses the job (git-source.ts).
 * A refused job keeps its id and token when they could be read, so the caller reports it failed.
 */
import { z } from 'zod';
import { schemaMessages } from '../../util/schema-messages.js';
import { keyedVariables, type BuildPayloadResult } from '../build-payload.js';
import { gitSourceIssues } from '../git-source.js';
import { withoutNulls } from '../json-nulls.js';
import type { ArtifactsOptions, BuildOptions, BuildPayload, CacheOptions, DependencyBuild, ExecutorOpts, QueueInfo, ServiceOptions } from '../types.js';

const stringList = z.array(z.string());
const when = z.enum(['on_success', 'on_failure', 'always']);
const pullPolicy = z
  .array(z.unknown())
  .transform((items) => items.filter((item): item is 'always' | 'if-not-present' | 'never' => item === 'always' || item === 'if-not-present' || item === 'never'))
  .optional()
  .catch(undefined);

const variableSchema = z.looseObject({
  key: z.string(),
  value: z.union([z.string(), z.number(), z.boolean()]).transform(String).default(''),
  public: z.boolean().default(false),
  masked: z.boolean().default(false),
  file: z.boolean().optional(),
  raw: z.boolean().optional(),
});

const variablesSchema = keyedVariables(variableSchema);

const stepSchema = z.looseObject({
  name: z.string(),
  script: stringList.default([]),
  timeout: z.number().optional().catch(undefined),
  when: when.catch('on_success'),
  allow_failure: z.boolean().catch(false),
});

/**
 * `executor_opts`: `docker: { platform, user }`, `kubernetes: { user }` (a user may be a number); the
 * names GitLab Runner 19 does not know are kept apart, as it refuses a job that has them.
 */
const userValue = z.union([z.string(), z.int().nonnegative().transform(String)]);
const executorOptsSchema = z
  .record(z.string(), z.unknown())
  .transform((raw): ExecutorOpts => {
    const opts: ExecutorOpts = {};
    const unsupported: string[] = [];
    const section = (key: 'docker' | 'kubernetes', allowed: readonly string[]): Record<string, string> | undefined => {
      const value = raw[key];
      if (value === undefined) return undefined;
      const fields = typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
      const out: Record<string, string> = {};
      for (const [name, field] of Object.entries(fields)) {
        const parsed = userValue.safeParse(field);
        if (!allowed.includes(name)) unsupported.push(`${key}.${name}`);
        else if (parsed.success && parsed.data !== '') out[name] = parsed.data;
      }
      return out;
    };
    for (const key of Object.keys(raw)) if (key !== 'docker' && key !== 'kubernetes') unsupported.push(key);
    const docker = section('docker', ['platform', 'user']);
    const kubernetes = section('kubernetes', ['user']);
    if (docker && Object.keys(docker).length > 0) opts.docker = docker;
    if (kubernetes && Object.keys(kubernetes).length > 0) opts.kubernetes = kubernetes;
    if (unsupported.length > 0) opts.unsupported = unsupported;
    return opts;
  })
  .optional()
  .catch(undefined);

const imageSchema = z.looseObject({
  name: z.string().min(1),
  entrypoint: stringList.optional().catch(undefined),
  pull_policy: pullPolicy,
  executor_opts: executorOptsSchema,
});

const serviceSchema = imageSchema.extend({
  alias: z.string().optional().catch(undefined),
  command: stringList.optional().catch(undefined),
  // A service's own variables; one without a key names nothing and is dropped.
  variables: keyedVariables(z.looseObject({ key: z.string(), value: z.union([z.string(), z.number(), z.boolean()]).transform(String).default('') })).optional().catch(undefined),
});

/** Only some executors use these: an entry that cannot be read is dropped. */
function tolerantList<T>(schema: z.ZodType<T>) {
  return z
    .array(z.unknown())
    .transform((items) => items.flatMap((item) => {
      const parsed = schema.safeParse(item);
      return parsed.success ? [parsed.data] : [];
    }))
    .catch([]);
}

const artifactSchema = z.looseObject({
  name: z.string().optional(),
  untracked: z.boolean().default(false),
  paths: stringList.default([]),
  exclude: stringList.optional(),
  when: when.default('on_success'),
  expire_in: z.string().optional(),
  artifact_type: z.string().min(1).default('archive'),
  artifact_format: z.enum(['zip', 'gzip', 'raw']).default('zip'),
});

const cacheSchema = z.looseObject({
  key: z.string().optional(),
  untracked: z.boolean().optional(),
  paths: stringList.optional(),
  // Expanded by the runner (`policy: $CACHE_POLICY`); checked then, as GitLab Runner does.
  policy: z.string().optional(),
  when: when.optional(),
  fallback_keys: stringList.optional(),
});

const dependencySchema = z.looseObject({
  id: z.int().optional(),
  name: z.string().default(''),
  token: z.string().default(''),
  artifacts_file: z
    .looseObject({ filename: z.string().default(''), size: z.int().nonnegative().optional().catch(undefined) })
    .optional(),
});

/** The hooks the runner acts on: a list that is not one refuses the job, a hook without a name is dropped. */
const hooksSchema = z
  .array(z.unknown())
  .transform((items) => items.filter((item) => typeof item === 'object' && item !== null && typeof (item as { name?: unknown }).name === 'string' && (item as { name: string }).name !== ''))
  .pipe(z.array(z.looseObject({ name: z.string(), script: stringList.default([]) })));

const credentialSchema = z.looseObject({ type: z.string().catch(''), url: z.string().catch(''), username: z.string().catch(''), password: z.string().catch('') });

const jobSchema = z
  .looseObject({
    id: z.int(),
    token: z.string().min(1, 'must not be empty'),
    allow_git_fetch: z.boolean().default(false),
    job_info: z.looseObject({
      name: z.string(),
      stage: z.string().default(''),
      project_id: z.int(),
      project_name: z.string().catch(''),
      // Metrics only: a value of the wrong kind is dropped, never a reason to refuse the job.
      time_in_queue_seconds: z.number().nonnegative().optional().catch(undefined),
      project_jobs_running_on_instance_runners_count: z.string().max(32).optional().catch(undefined),
      queue_size: z.int().nonnegative().optional().catch(undefined),
      queue_depth: z.int().nonnegative().optional().catch(undefined),
    }),
    git_info: z.looseObject({
      repo_url: z.string().min(1, 'must not be empty'),
      ref: z.string(),
      sha: z.string().min(8, 'must have at least 8 characters'),
      before_sha: z.string().default(''),
      ref_type: z.enum(['branch', 'tag']).catch('branch'),
      refspecs: stringList.default([]),
      depth: z.int().nonnegative().default(0),
    }),
    runner_info: z.looseObject({ timeout: z.int().default(0) }).default({ timeout: 0 }),
    variables: variablesSchema.default([]),
    steps: z.array(stepSchema).default([]),
    image: imageSchema.optional().catch(undefined),
    services: tolerantList(serviceSchema).default([]),
    artifacts: z.array(artifactSchema).default([]),
    cache: z.array(cacheSchema).default([]),
    credentials: tolerantList(credentialSchema).default([]),
    dependencies: z.array(dependencySchema).default([]),
    hooks: hooksSchema.default([]),
    features: z
      .looseObject({
        failure_reasons: stringList.optional().catch(undefined),
        token_mask_prefixes: stringList.optional().catch(undefined),
      })
      .default({})
      .catch({}),
  })
  .superRefine((job, ctx) => {
    const git = job.git_info;
    const at = (key: string): PropertyKey[] => ['git_info', key];
    const sources = gitSourceIssues({ repoUrl: { path: at('repo_url'), value: git.repo_url }, sha: { path: at('sha'), value: git.sha }, ref: { path: at('ref'), value: git.ref }, refspecs: { path: at('refspecs'), value: git.refspecs } });
    for (const issue of sources) ctx.addIssue({ code: 'custom', ...issue });
    // GitLab Runner 19 refuses a job whose executor_opts it does not know, rather than ignore them.
    const refuseOpts = (opts: ExecutorOpts | undefined, path: PropertyKey[]): void => {
      if (opts?.unsupported) ctx.addIssue({ code: 'custom', path: [...path, 'executor_opts'], message: `unsupported options ${opts.unsupported.join(', ')} (supported: docker.platform, docker.user, kubernetes.user)` });
    };
    refuseOpts(job.image?.executor_opts, ['image']);
    job.services.forEach((service, index) => refuseOpts(service.executor_opts, ['services', index]));
    job.steps.forEach((step, index) => {
      if (step.name !== 'script' && step.name !== 'after_script') {
        ctx.addIssue({ code: 'custom', path: ['steps', index, 'name'], message: `step "${step.name}" is not supported by this runner (it runs script and after_script)` });
      }
    });
    job.dependencies.forEach((dep, index) => {
      if (!dep.artifacts_file?.filename) return;
      const why = `needed to download the artifacts of "${dep.name}"`;
      if (dep.id === undefined) ctx.addIssue({ code: 'custom', path: ['dependencies', index, 'id'], message: `missing (${why})` });
      if (dep.token === '') ctx.addIssue({ code: 'custom', path: ['dependencies', index, 'token'], message: `missing (${why})` });
    });
  });

type Job = z.output<typeof jobSchema>;

/** Words for what is wrong, never the value (it may be a secret); see schema-messages.ts. */
const messages = schemaMessages({ missing: 'missing or null (the runner needs it)' });

/** Validates a decoded V6 body and maps it onto the job model. Never throws. */
export function parseJobPayload(body: unknown): BuildPayloadResult {
  const input = withoutNulls(body);
  const result = jobSchema.safeParse(input, { error: messages });
  if (result.success) return { ok: true, build: toBuildPayload(result.data) };
  const message = result.error.issues
    .slice(0, 5)
    .map((issue) => `${issue.path.join('.') || '(body)'}: ${issue.message}`)
    .join('; ');
  const raw = (typeof input === 'object' && input !== null ? input : {}) as Record<string, unknown>;
  const id = Number.isSafeInteger(raw.id) ? (raw.id as number) : undefined;
  const token = typeof raw.token === 'string' && raw.token !== '' ? raw.token : undefined;
  return { ok: false, message, ...(id !== undefined ? { id } : {}), ...(token !== undefined ? { token } : {}) };
}

/** A valid v4 job as the job model: v1's build shape with the fields only v4 fills. */
function toBuildPayload(job: Job): BuildPayload {
  const { git_info: git, job_info: info } = job;
  const script = job.steps.find((step) => step.name === 'script')?.script ?? [];
  const build: BuildPayload = {
    id: job.id,
    token: job.token,
    ref: git.ref,
    tag: git.ref_type === 'tag',
    sha: git.sha,
    before_sha: git.before_sha,
    repo_url: git.repo_url,
    allow_git_fetch: job.allow_git_fetch,
    status: 'running',
    name: info.name,
    stage: info.stage,
    project_id: info.project_id,
    project_name: info.project_name,
    commands: script.join('\n'),
    options: toOptions(job, script),
    timeout: job.runner_info.timeout,
    variables: job.variables.map((v) => ({ key: v.key, value: v.value, public: v.public, masked: v.masked, ...(v.file ? { file: true } : {}), ...(v.raw ? { raw: true } : {}) })),
    depends_on_builds: job.dependencies.map(toDependency),
    credentials: job.credentials,
    refspecs: git.refspecs,
    git_depth: git.depth,
  };
  if (job.features.failure_reasons) build.failure_reasons = job.features.failure_reasons;
  const queue = queueInfo(info);
  if (queue) build.queue_info = queue;
  if (job.features.token_mask_prefixes) build.token_mask_prefixes = job.features.token_mask_prefixes;
  if (job.hooks.length > 0) build.hooks = job.hooks.map((hook) => ({ name: hook.name, script: hook.script }));
  return build;
}

function toOptions(job: Job, script: string[]): BuildOptions {
  const options: BuildOptions = { script };
  const after = job.steps.find((step) => step.name === 'after_script')?.script;
  if (after && after.length > 0) options.after_script = after;
  if (job.image) {
    options.image = job.image.name;
    if (job.image.entrypoint && job.image.entrypoint.length > 0) options.imageEntrypoint = job.image.entrypoint;
    if (job.image.pull_policy && job.image.pull_policy.length > 0) options.imagePullPolicy = job.image.pull_policy;
    if (job.image.executor_opts && Object.keys(job.image.executor_opts).length > 0) options.imageExecutorOpts = job.image.executor_opts;
  }
  if (job.services.length > 0) {
    options.services = job.services.map((service) => service.name);
    options.serviceSpecs = job.services.map(toService);
  }
  if (job.artifacts.length > 0) options.artifacts = job.artifacts.map(toArtifacts);
  if (job.cache.length > 0) options.cache = job.cache.map((cache): CacheOptions => ({ ...cache }));
  return options;
}

function toService(service: z.output<typeof serviceSchema>): ServiceOptions {
  return {
    name: service.name,
    ...(service.alias ? { alias: service.alias } : {}),
    ...(service.entrypoint && service.entrypoint.length > 0 ? { entrypoint: service.entrypoint } : {}),
    ...(service.command && service.command.length > 0 ? { command: service.command } : {}),
    ...(service.pull_policy && service.pull_policy.length > 0 ? { pull_policy: service.pull_policy } : {}),
    ...(service.variables && service.variables.length > 0 ? { variables: service.variables.map(({ key, value }) => ({ key, value })) } : {}),
    ...(service.executor_opts && Object.keys(service.executor_opts).length > 0 ? { executor_opts: service.executor_opts } : {}),
  };
}

function toArtifacts(entry: z.output<typeof artifactSchema>): ArtifactsOptions {
  return {
    ...(entry.name !== undefined ? { name: entry.name } : {}),
    paths: entry.paths,
    untracked: entry.untracked,
    when: entry.when,
    ...(entry.expire_in !== undefined ? { expire_in: entry.expire_in } : {}),
    ...(entry.exclude && entry.exclude.length > 0 ? { exclude: entry.exclude } : {}),
    artifact_type: entry.artifact_type,
    artifact_format: entry.artifact_format,
  };
}

function toDependency(dep: z.output<typeof dependencySchema>): DependencyBuild {
  return {
    id: dep.id ?? 0,
    name: dep.name,
    token: dep.token,
    ...(dep.artifacts_file?.filename ? { artifacts_file: { filename: dep.artifacts_file.filename, ...(dep.artifacts_file.size !== undefined ? { size: dep.artifacts_file.size } : {}) } } : {}),
    // v1 fields v4 does not send; nothing reads them.
    ref: '',
    tag: false,
    sha: '',
    status: 'success',
    stage: '',
    project_id: 0,
    project_name: '',
  };
}

/** The queue figures of `job_info`, when the server sent any. */
function queueInfo(info: Job['job_info']): QueueInfo | undefined {
  const queue: QueueInfo = {
    ...(info.time_in_queue_seconds !== undefined ? { time_in_queue_seconds: info.time_in_queue_seconds } : {}),
    ...(info.project_jobs_running_on_instance_runners_count !== undefined ? { project_jobs_running: info.project_jobs_running_on_instance_runners_count } : {}),
    ...(info.queue_size !== undefined ? { queue_size: info.queue_size } : {}),
    ...(info.queue_depth !== undefined ? { queue_depth: info.queue_depth } : {}),
  };
  return Object.keys(queue).length > 0 ? queue : undefined;
}
