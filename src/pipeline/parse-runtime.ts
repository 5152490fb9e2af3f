/**
 * The job keys that drive how a pipeline runs rather than what a job does: `needs`, `when` with
 * `start_in`, `retry`, `interruptible` and `coverage`. Each reader takes the raw YAML value and where
 * it sits and returns the normalised value or throws a `PipelineConfigError` naming that place.
 * Checks that need the other jobs (unknown needs, cycles) are in `needs-graph.ts`.
 */
import { parseDurationSeconds } from '../util/duration.js';
import { childPath, configError, type ConfigPath } from './parse-error.js';
import { checkKeys, isMap, readBoolean, readEnum, readString } from './parse-values.js';
import { JOB_KEYWORDS, NEED_KEYWORDS, RETRY_KEYWORDS } from './keywords.js';
import type { JobNeed, JobRetrySpec, JobWhen, RetryWhen } from './spec.js';

export const JOB_WHEN: readonly JobWhen[] = ['on_success', 'on_failure', 'always', 'manual', 'delayed'];

/** GitLab's cap on `needs:` entries per job (`ci_dag_limit_needs`). */
const MAX_NEEDS = 50;

/** `needs: [build, { job: lint, artifacts: false, optional: true }]`; `needs: []` starts at once. */
export function readNeeds(value: unknown, path: ConfigPath): JobNeed[] {
  if (value === null) return [];
  if (!Array.isArray(value)) configError(path, 'must be a list of job names or maps with job');
  // `!reference [.base, needs]` inside the list nests one list in another: GitLab flattens it.
  // An empty entry inside a nested list (an anchor holding `- ` alone, as Xen's pipeline has) names
  // nothing and is skipped, as GitLab does; an empty entry of the list itself is refused, as GitLab does.
  const list = value.flatMap((item: unknown) => (Array.isArray(item) ? (item.flat(9) as unknown[]).filter((inner) => inner !== null && inner !== undefined) : [item]));
  if (list.length > MAX_NEEDS) configError(path, `lists ${list.length} jobs; at most ${MAX_NEEDS} are allowed`);
  const needs = list.flatMap((item: unknown, index: number): JobNeed[] => {
    const at = childPath(path, String(index));
    if (typeof item === 'string') return [{ job: readString(item, at), artifacts: true, optional: false }];
    if (!isMap(item)) configError(at, 'must be a job name or a map with job');
    checkKeys(item, NEED_KEYWORDS, at);
    const need: JobNeed = {
      job: readString(item.job, childPath(at, 'job')),
      artifacts: item.artifacts === undefined ? true : readBoolean(item.artifacts, childPath(at, 'artifacts')),
      optional: item.optional === undefined ? false : readBoolean(item.optional, childPath(at, 'optional')),
    };
    if (item.parallel !== undefined && item.parallel !== null) need.matrix = readNeedMatrix(item.parallel, childPath(at, 'parallel'));
    return [need];
  });
  // The same job twice is a mistake, unless each names other copies of a matrix job.
  const names = needs.filter((need) => need.matrix === undefined).map((need) => need.job);
  const twice = names.find((name, index) => names.indexOf(name) !== index);
  if (twice !== undefined) configError(path, `names '${twice}' twice`);
  return needs;
}

/** `parallel: { matrix: [{ PROVIDER: aws, STACK: [a, b] }] }` of a need: the copies it selects. */
function readNeedMatrix(value: unknown, path: ConfigPath): Array<Record<string, string[]>> {
  if (!isMap(value)) configError(path, 'must be a map with matrix: (a list of variable maps)');
  checkKeys(value, NEED_KEYWORDS.parallel?.keys ?? {}, path);
  const at = childPath(path, 'matrix');
  if (!Array.isArray(value.matrix) || value.matrix.length === 0) configError(at, 'must be a non-empty list of maps of variables to values');
  return value.matrix.map((entry: unknown, index: number) => {
    const entryAt = childPath(at, String(index));
    if (!isMap(entry) || Object.keys(entry).length === 0) configError(entryAt, 'must be a map of matrix variables to values');
    return Object.fromEntries(
      Object.entries(entry).map(([key, raw]) => {
        const values = (Array.isArray(raw) ? raw : [raw]).map((item) => (typeof item === 'number' ? String(item) : item));
        if (values.length === 0 || !values.every((item): item is string => typeof item === 'string')) configError(childPath(entryAt, key), 'must be a value or a list of values');
        return [key, values];
      }),
    );
  });
}

/**
 * `allow_failure: true | false`, or `{ exit_codes: 137 }` / `{ exit_codes: [1, 137] }`: the job may
 * fail with those exit statuses only (the server reads the status from the job's last failure line).
 */
export function readAllowFailure(value: unknown, path: ConfigPath): { allowed: boolean; exitCodes?: number[] } {
  if (!isMap(value)) return { allowed: readBoolean(value, path) };
  checkKeys(value, JOB_KEYWORDS.allow_failure?.keys ?? {}, path);
  return { allowed: false, exitCodes: readExitCodes(value.exit_codes, childPath(path, 'exit_codes')) };
}

/** `when:` — one of GitLab's job conditions. */
export function readWhen(value: unknown, path: ConfigPath): JobWhen {
  return readEnum(value, JOB_WHEN, path);
}

/** GitLab's limit for `start_in`: one week. */
const MAX_START_IN_S = 7 * 24 * 3600;

/** `start_in: 30 minutes` (or a number of seconds) → whole seconds, 1 s to one week. */
export function readStartIn(value: unknown, path: ConfigPath): number {
  const parsed = typeof value === 'number' ? value : typeof value === 'string' ? parseDurationSeconds(value) : undefined;
  const seconds = parsed === undefined ? undefined : Math.round(parsed);
  if (seconds === undefined || seconds < 1 || seconds > MAX_START_IN_S) {
    configError(path, 'must be a duration between 1 second and 1 week (e.g. 30 seconds, 5 minutes, 1 day)');
  }
  return seconds;
}

export const RETRY_WHEN: readonly RetryWhen[] = [
  'always',
  'unknown_failure',
  'script_failure',
  'api_failure',
  'stuck_or_timeout_failure',
  'runner_system_failure',
  'runner_unsupported',
  'stale_schedule',
  'job_execution_timeout',
  'archived_failure',
  'unmet_prerequisites',
  'scheduler_failure',
  'data_integrity_failure',
  'runner_provisioning_timeout',
];

/**
 * `retry: 2` or `retry: { max: 2, when: [script_failure], exit_codes: [137] }`. `when` defaults to
 * `always`, or to nothing when `exit_codes` is given (then only those exit statuses are retried).
 */
export function readRetry(value: unknown, path: ConfigPath): JobRetrySpec {
  const readMax = (raw: unknown, at: ConfigPath): number => {
    if (typeof raw !== 'number' || !Number.isInteger(raw) || raw < 0 || raw > 2) configError(at, 'must be 0, 1 or 2');
    return raw;
  };
  if (!isMap(value)) return { max: readMax(value, path), when: ['always'] };
  checkKeys(value, RETRY_KEYWORDS, path);
  const max = value.max === undefined ? 0 : readMax(value.max, childPath(path, 'max'));
  const exitCodes = value.exit_codes === undefined || value.exit_codes === null ? undefined : readExitCodes(value.exit_codes, childPath(path, 'exit_codes'));
  const rawWhen = value.when ?? (exitCodes ? [] : 'always');
  const whenPath = childPath(path, 'when');
  const list = Array.isArray(rawWhen) ? rawWhen : [rawWhen];
  if (list.length === 0 && !exitCodes) configError(whenPath, `must name at least one failure reason (${RETRY_WHEN.join(', ')})`);
  const spec: JobRetrySpec = { max, when: list.map((item, index) => readEnum(item, RETRY_WHEN, Array.isArray(rawWhen) ? childPath(whenPath, String(index)) : whenPath)) };
  if (exitCodes) spec.exitCodes = exitCodes;
  return spec;
}

/** An exit status (0–255) or a list of them. */
function readExitCodes(value: unknown, path: ConfigPath): number[] {
  const list = Array.isArray(value) ? (value as unknown[]) : [value];
  if (list.length === 0 || !list.every((code) => typeof code === 'number' && Number.isInteger(code) && code >= 0 && code <= 255)) {
    configError(path, 'must be an exit status (0-255) or a list of them');
  }
  return list as number[];
}

/** `coverage: '/Coverage: (\d+\.\d+)%/'` → the regex's source and flags, checked to compile. */
export function readCoverage(value: unknown, path: ConfigPath): { source: string; flags: string } {
  const text = readString(value, path);
  const match = /^\/(.*)\/([a-z]*)$/s.exec(text);
  if (!match) configError(path, "must be a regular expression between slashes, e.g. '/Coverage: (\\d+\\.\\d+)%/'");
  const [, written = '', after = ''] = match;
  if (!/^[imsu]*$/.test(after)) configError(path, `has flags '${after}'; only i, m, s and u are allowed`);
  // GitLab matches coverage with RE2, where flags may lead the pattern: `(?i)total`. JavaScript takes
  // them after the closing slash instead.
  const inline = /^\(\?([a-zA-Z]+)\)/.exec(written);
  const leading = inline?.[1] ?? '';
  if (!/^[ims]*$/.test(leading)) configError(path, `starts with (?${leading}); of RE2's flags only i, m and s can be used here`);
  const source = written.slice(inline?.[0].length ?? 0);
  const flags = [...new Set(after + leading)].join('');
  try {
    new RegExp(source, flags);
  } catch (error) {
    configError(path, `is not a valid regular expression: ${(error as Error).message}`);
  }
  return { source, flags };
}
