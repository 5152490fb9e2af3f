/**
 * Validation of the E4 `201` body (docs/protocol-v1.md §5.1): the legacy client decoded into typed fields and
 * dropped builds whose JSON did not fit. Ours validates, and the caller reports an invalid build as
 * `failed` instead of dropping it (§12 item 22).
 *
 * What is accepted, field by field (the real server is GitLab 8.x–9.x):
 * - `null` anywhere means absent (json-nulls.ts), and unknown keys are kept.
 * - Fields the runner needs and cannot guess — `id`, `token`, `sha` (≥ 8 chars), `ref`, `name`,
 *   `project_id`, `repo_url` — refuse the build when absent; the message names them.
 * - Fields the runner uses but has a documented default for (`tag`, `commands`, `before_sha`,
 *   `stage`, `allow_git_fetch`, `options`, `timeout`, `variables`, `depends_on_builds`) take it when
 *   absent; a wrong JSON type still refuses the build, naming the field.
 * - Fields the runner does not use (`status`, `project_name`, `artifacts_expire_at`, the build's own
 *   `artifacts_file`, `credentials` with the shell executor, most of a dependency) never refuse a
 *   build: what cannot be read is dropped or defaulted.
 * - A variable without a key is dropped; a scalar value is exported as its text; a variable whose
 *   `public` is absent counts as secret (masked), as the legacy client's zero value `false` did.
 * - A dependency's `id` and `token` are needed only when its artifacts are downloaded.
 * - `repo_url`, `sha` and `ref` reach git: anything but an http(s) URL, a hex SHA and a valid ref name
 *   refuses the build (git-source.ts).
 */
import { z } from 'zod';
import { schemaMessages } from '../util/schema-messages.js';
import { optionsSchema } from './build-options.js';
import { gitSourceIssues } from './git-source.js';
import { withoutNulls } from './json-nulls.js';
import type { BuildPayload, BuildStatus } from './types.js';

const statuses = ['created', 'pending', 'running', 'success', 'failed', 'canceled', 'skipped', 'manual', 'scheduled', 'waiting_for_resource'] as const;

/** For a field the runner does not read: anything unreadable becomes `fallback`. */
const status = (fallback: BuildStatus) => z.enum(statuses).catch(fallback);
const unusedString = z.string().catch('');

const variableSchema = z.looseObject({
  key: z.string(),
  value: z.union([z.string(), z.number(), z.boolean()]).transform(String).default(''),
  public: z.boolean().default(false),
  file: z.boolean().optional(),
});

/**
 * A list of variables read by `variable`: entries without a key name nothing the job could see; they
 * are dropped, not refused (v1 and v4 alike).
 */
export function keyedVariables<T extends z.ZodType>(variable: T) {
  return z
    .array(z.unknown())
    .transform((entries) => entries.filter((entry) => !(typeof entry === 'object' && entry !== null && !('key' in entry))))
    .pipe(z.array(variable));
}

const variablesSchema = keyedVariables(variableSchema);

const artifactsFileSchema = z.looseObject({
  filename: z.string().default(''),
  // Only checked against the download when present; GitLab 8.x sends null for old artifacts.
  size: z.int().nonnegative().optional().catch(undefined),
});

const dependencySchema = z.looseObject({
  id: z.int().optional(),
  name: z.string().default(''),
  token: z.string().default(''),
  artifacts_file: artifactsFileSchema.optional(),
  ref: unusedString,
  tag: z.boolean().catch(false),
  sha: unusedString,
  status: status('success'),
  stage: unusedString,
  project_id: z.int().catch(0),
  project_name: unusedString,
});

const credentialSchema = z.looseObject({ type: unusedString, url: unusedString, username: unusedString, password: unusedString });

/** Unused by the shell executor; entries that are not objects are dropped. */
const credentialsSchema = z
  .array(z.unknown())
  .transform((entries) => entries.flatMap((entry) => {
    const parsed = credentialSchema.safeParse(entry);
    return parsed.success ? [parsed.data] : [];
  }))
  .catch([]);

const buildSchema = z
  .looseObject({
    id: z.int(),
    ref: z.string(),
    tag: z.boolean().default(false),
    sha: z.string().min(8, 'must have at least 8 characters'),
    status: status('running'),
    name: z.string(),
    token: z.string().min(1, 'must not be empty'),
    stage: z.string().default(''),
    project_id: z.int(),
    project_name: unusedString,
    commands: z.string().default(''),
    repo_url: z.string().min(1, 'must not be empty'),
    before_sha: z.string().default(''),
    allow_git_fetch: z.boolean().default(false),
    artifacts_expire_at: z.string().optional().catch(undefined),
    artifacts_file: artifactsFileSchema.optional().catch(undefined),
    options: optionsSchema.default({}),
    timeout: z.int().default(0),
    variables: variablesSchema.default([]),
    depends_on_builds: z.array(dependencySchema).default([]),
    credentials: credentialsSchema.default([]),
  })
  .superRefine((build, ctx) => {
    const sources = gitSourceIssues({ repoUrl: { path: ['repo_url'], value: build.repo_url }, sha: { path: ['sha'], value: build.sha }, ref: { path: ['ref'], value: build.ref } });
    for (const issue of sources) ctx.addIssue({ code: 'custom', ...issue });
    const filter = build.options.dependencies;
    build.depends_on_builds.forEach((dep, index) => {
      const downloaded = dep.artifacts_file?.filename && (filter === undefined || filter.includes(dep.name));
      if (!downloaded) return;
      const why = `needed to download the artifacts of "${dep.name}"`;
      if (dep.id === undefined) ctx.addIssue({ code: 'custom', path: ['depends_on_builds', index, 'id'], message: `missing (${why})` });
      if (dep.token === '') ctx.addIssue({ code: 'custom', path: ['depends_on_builds', index, 'token'], message: `missing (${why})` });
    });
  })
  .transform((build) => ({
    ...build,
    depends_on_builds: build.depends_on_builds.map((dep) => ({ ...dep, id: dep.id ?? 0 })),
  }));

export type BuildPayloadResult =
  | { ok: true; build: BuildPayload }
  | { ok: false; message: string; /** id and token when they could be read, so the build can be failed */ id?: number; token?: string };

/** Words for what is wrong, never the value (it may be a secret); see schema-messages.ts. */
const messages = schemaMessages({ missing: 'missing or null (the runner needs it)' });

/** Validates a decoded E4 body. Never throws. */
export function parseBuildPayload(body: unknown): BuildPayloadResult {
  const input = withoutNulls(body);
  const result = buildSchema.safeParse(input, { error: messages });
  if (result.success) return { ok: true, build: result.data as BuildPayload };
  const message = result.error.issues
    .slice(0, 5)
    .map((issue) => `${issue.path.join('.') || '(body)'}: ${issue.message}`)
    .join('; ');
  const raw = (typeof input === 'object' && input !== null ? input : {}) as Record<string, unknown>;
  const id = Number.isSafeInteger(raw.id) ? (raw.id as number) : undefined;
  const token = typeof raw.token === 'string' && raw.token !== '' ? raw.token : undefined;
  return { ok: false, message, ...(id !== undefined ? { id } : {}), ...(token !== undefined ? { token } : {}) };
}
