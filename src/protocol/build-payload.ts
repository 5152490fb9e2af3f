/**
 * Validation of the E4 `201` body (PROTOCOL.md §5.1): the legacy client decoded into typed fields and
 * dropped builds whose JSON did not fit. Ours validates, and the caller reports an invalid build as
 * `failed` instead of dropping it (§12 item 22).
 */
import { z } from 'zod';
import type { BuildPayload } from './types.js';

const statusSchema = z.enum(['created', 'pending', 'running', 'success', 'failed', 'canceled', 'skipped', 'manual']);

const artifactsFileSchema = z.object({ filename: z.string(), size: z.int().nonnegative() });

const variableSchema = z.object({
  key: z.string(),
  value: z.string(),
  public: z.boolean(),
  file: z.boolean().optional(),
});

const dependencySchema = z.looseObject({
  id: z.int(),
  ref: z.string().default(''),
  tag: z.boolean().default(false),
  sha: z.string().default(''),
  status: statusSchema.default('success'),
  name: z.string(),
  token: z.string(),
  stage: z.string().default(''),
  project_id: z.int().default(0),
  project_name: z.string().default(''),
  artifacts_file: artifactsFileSchema.optional(),
});

const optionsSchema = z.looseObject({
  image: z.string().optional(),
  services: z.array(z.string()).optional(),
  artifacts: z
    .object({
      name: z.string().optional(),
      paths: z.array(z.string()).optional(),
      untracked: z.boolean().optional(),
      when: z.enum(['on_success', 'on_failure', 'always']).optional(),
      expire_in: z.string().optional(),
    })
    .optional(),
  cache: z
    .object({
      key: z.string().optional(),
      paths: z.array(z.string()).optional(),
      untracked: z.boolean().optional(),
    })
    .optional(),
  dependencies: z.array(z.string()).optional(),
  after_script: z.array(z.string()).optional(),
});

/** Drops `null` values the way the legacy client skipped them (§5.3). */
function withoutNulls(value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== null));
}

const buildSchema = z.looseObject({
  id: z.int(),
  ref: z.string(),
  tag: z.boolean().default(false),
  sha: z.string().min(8, 'sha must have at least 8 characters'),
  status: statusSchema.default('running'),
  name: z.string(),
  token: z.string().min(1),
  stage: z.string().default(''),
  project_id: z.int(),
  project_name: z.string().default(''),
  commands: z.string().default(''),
  repo_url: z.string(),
  before_sha: z.string().default(''),
  allow_git_fetch: z.boolean().default(false),
  artifacts_expire_at: z.string().optional(),
  artifacts_file: artifactsFileSchema.optional(),
  options: z.preprocess(withoutNulls, optionsSchema).default({}),
  timeout: z.int().default(0),
  variables: z.array(variableSchema).default([]),
  depends_on_builds: z.array(dependencySchema).default([]),
  credentials: z
    .array(z.object({ type: z.string(), url: z.string(), username: z.string(), password: z.string() }))
    .default([]),
});

export type BuildPayloadResult =
  | { ok: true; build: BuildPayload }
  | { ok: false; message: string; /** id and token when they could be read, so the build can be failed */ id?: number; token?: string };

/** Validates a decoded E4 body. Never throws. */
export function parseBuildPayload(body: unknown): BuildPayloadResult {
  const result = buildSchema.safeParse(body);
  if (result.success) return { ok: true, build: result.data as BuildPayload };
  const message = result.error.issues
    .slice(0, 5)
    .map((issue) => `${issue.path.join('.') || '(body)'}: ${issue.message}`)
    .join('; ');
  const raw = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  const id = Number.isSafeInteger(raw.id) ? (raw.id as number) : undefined;
  const token = typeof raw.token === 'string' ? raw.token : undefined;
  return { ok: false, message, ...(id !== undefined ? { id } : {}), ...(token !== undefined ? { token } : {}) };
}
