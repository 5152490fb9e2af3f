/**
 * The page's calls to its server: GETs of JSON, and POSTs that carry the CSRF token from the page's
 * `<meta>`. The admin token itself lives in an HttpOnly cookie this code never sees.
 */

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function csrf(): string {
  return document.querySelector<HTMLMetaElement>('meta[name="csrf-token"]')?.content ?? '';
}

async function reply<T>(response: Response): Promise<T> {
  if (response.status === 401) {
    // The cookie expired or the admin token changed: back to the sign-in form.
    location.assign(location.pathname);
    throw new ApiError(401, 'signed out');
  }
  const text = await response.text();
  let body: unknown = undefined;
  try {
    body = text === '' ? undefined : JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (!response.ok) {
    const message = body && typeof body === 'object' && 'message' in body ? String((body as { message: unknown }).message) : `${response.status} ${response.statusText}`;
    throw new ApiError(response.status, message);
  }
  return body as T;
}

export async function getJson<T>(path: string, signal?: AbortSignal): Promise<T> {
  return reply<T>(await fetch(path, { headers: { accept: 'application/json' }, credentials: 'same-origin', ...(signal ? { signal } : {}) }));
}

export async function post<T>(path: string, body: unknown = {}): Promise<T> {
  const response = await fetch(path, {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'content-type': 'application/json', 'x-csrf-token': csrf(), accept: 'application/json' },
    body: JSON.stringify(body),
  });
  return reply<T>(response);
}

/** The JSON shapes of `/-/ui/api` (see src/server/ui/views.ts). */
export interface RunnerRef {
  id: number;
  description: string;
}
export interface Actions {
  cancel: boolean;
  /** The job is canceling (its after_script runs): canceling it again stops it at once. */
  force_cancel: boolean;
  retry: boolean;
  play: boolean;
}
export interface JobSummary {
  id: number;
  name: string;
  stage: string;
  status: string;
  allow_failure: boolean;
  when: string;
  runner: RunnerRef | null;
  started_at: string | null;
  finished_at: string | null;
  duration: number | null;
}
export interface PipelineSummary {
  id: number;
  project: string | null;
  ref: string;
  tag: boolean;
  sha: string;
  status: string;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  duration: number | null;
  jobs: Array<{ id: number; name: string; stage: string; status: string }>;
}
export interface PipelineDetail extends PipelineSummary {
  variables: string[];
  name: string | null;
  not_applied: string[];
  stages: Array<{ name: string; jobs: Array<JobSummary & { actions: Actions }> }>;
}
export interface JobDetail extends JobSummary {
  tags: string[];
  image: string | null;
  timeout: number;
  created_at: string;
  queued_duration: number | null;
  pipeline: { id: number; ref: string; sha: string; project: string | null } | null;
  variables: Array<{ key: string; source: string }>;
  trace_size: number;
  artifacts: { filename: string; size: number; expire_at: string | null } | null;
  actions: Actions;
  coverage: number | null;
  tests: { passed: number; failed: number; skipped: number; failed_names: string[] } | null;
  reports: Array<{ type: string; filename: string; size: number }>;
  resource_group: string | null;
}
export interface RunnerDetail {
  id: number;
  description: string;
  tags: string[];
  run_untagged: boolean;
  locked: boolean;
  active: boolean;
  project: string | null;
  contacted_at: string | null;
  name: string | null;
  version: string | null;
  platform: string | null;
  architecture: string | null;
  executor: string | null;
  registration: 'registration' | 'created';
  api: 'v1' | 'v4' | null;
  access_level: string;
  maximum_timeout: number | null;
  managers: Array<{ system_id: string; version: string | null; platform: string | null; contacted_at: string | null }>;
}
