/**
 * The control variables of the user's scripts, read as GitLab Runner 19 reads them (common/build.go's
 * getStageTimeoutContexts, common/build_settings.go): RUNNER_SCRIPT_TIMEOUT and
 * RUNNER_AFTER_SCRIPT_TIMEOUT (Go durations, `1h30m`), AFTER_SCRIPT_IGNORE_ERRORS and
 * EXECUTOR_JOB_SECTION_ATTEMPTS. A value it cannot use falls back to the default with GitLab Runner's
 * warning, word for word; none fails the job.
 */
import { AFTER_SCRIPT_TIMEOUT_MS } from '../../executors/common/stages.js';
import { parseGoBool } from '../../util/go-bool.js';

type Variables = ReadonlyArray<{ key: string; value: string }>;

export interface ScriptControls {
  /** RUNNER_SCRIPT_TIMEOUT: the steps' own limit, when one applies (else the job timeout alone). */
  scriptTimeoutMs?: number;
  /** RUNNER_AFTER_SCRIPT_TIMEOUT, else 5 minutes (the job timeout still bounds it). */
  afterScriptTimeoutMs: number;
  /** AFTER_SCRIPT_IGNORE_ERRORS (default true): a failed after_script leaves the job's outcome as it is. */
  afterScriptIgnoreErrors: boolean;
  /** EXECUTOR_JOB_SECTION_ATTEMPTS: how often a step whose container vanished is tried (1–10). */
  sectionAttempts: number;
  /** GitLab Runner's warnings for values it could not use. */
  warnings: string[];
}

const MIN_ATTEMPTS = 1;
const MAX_ATTEMPTS = 10;

/** Reads the script controls; `jobLeftMs`: what is left of the job's timeout now. */
export function readScriptControls(vars: Variables, jobLeftMs: number): ScriptControls {
  const warnings: string[] = [];
  const variableValue = (list: Variables, key: string): string | undefined => list.findLast((v) => v.key === key)?.value;
  const timeout = (name: 'RUNNER_SCRIPT_TIMEOUT' | 'RUNNER_AFTER_SCRIPT_TIMEOUT', fallback: number | undefined): number | undefined => {
    const raw = variableValue(vars, name) ?? '';
    if (raw.trim() === '') return fallback;
    const ms = parseGoDuration(raw);
    if (ms === undefined) warnings.push(`Ignoring malformed ${name} timeout: ${raw}`);
    else if (ms < 0) warnings.push(`Ignoring relative ${name} timeout: ${raw}`);
    // GitLab Runner leaves the default here: the job timeout bounds the stage anyway.
    else if (ms > jobLeftMs) warnings.push(`${name} timeout: ${raw} is longer than job timeout. Setting to job timeout`);
    else if (ms !== 0) return ms;
    return fallback;
  };
  const scriptTimeoutMs = timeout('RUNNER_SCRIPT_TIMEOUT', undefined);
  const afterScriptTimeoutMs = timeout('RUNNER_AFTER_SCRIPT_TIMEOUT', AFTER_SCRIPT_TIMEOUT_MS) ?? AFTER_SCRIPT_TIMEOUT_MS;

  let afterScriptIgnoreErrors = true;
  const ignore = variableValue(vars, 'AFTER_SCRIPT_IGNORE_ERRORS') ?? '';
  if (ignore !== '') {
    const parsed = parseGoBool(ignore);
    if (parsed === undefined) warnings.push(`AFTER_SCRIPT_IGNORE_ERRORS: expected bool got "${ignore}", using default value: true`);
    else afterScriptIgnoreErrors = parsed;
  }

  let sectionAttempts = 1;
  const attempts = variableValue(vars, 'EXECUTOR_JOB_SECTION_ATTEMPTS') ?? '';
  if (attempts !== '') {
    if (!/^[+-]?\d+$/.test(attempts)) warnings.push(`EXECUTOR_JOB_SECTION_ATTEMPTS: expected int got "${attempts}", using default value: 1`);
    else {
      const n = Number(attempts);
      sectionAttempts = Math.max(MIN_ATTEMPTS, Math.min(MAX_ATTEMPTS, n));
      if (sectionAttempts !== n) warnings.push(`EXECUTOR_JOB_SECTION_ATTEMPTS: number of attempts out of the range [${MIN_ATTEMPTS}, ${MAX_ATTEMPTS}], clamping to: ${sectionAttempts}`);
    }
  }
  return { ...(scriptTimeoutMs !== undefined ? { scriptTimeoutMs } : {}), afterScriptTimeoutMs, afterScriptIgnoreErrors, sectionAttempts, warnings };
}

const UNITS: Readonly<Record<string, number>> = { ns: 1e-6, us: 1e-3, 'µs': 1e-3, 'μs': 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Go's time.ParseDuration, in milliseconds: `1h30m`, `90s`, `1.5h`, `-2m`, `0`. Undefined when invalid. */
export function parseGoDuration(text: string): number | undefined {
  const match = /^([+-]?)(.*)$/s.exec(text);
  const body = match?.[2] ?? '';
  if (body === '0') return 0;
  if (body === '') return undefined;
  let total = 0;
  const part = /(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)/y;
  let at = 0;
  while (at < body.length) {
    part.lastIndex = at;
    const found = part.exec(body);
    if (!found) return undefined;
    total += Number(found[1]) * (UNITS[found[2] ?? ''] ?? Number.NaN);
    at = part.lastIndex;
  }
  return Number.isFinite(total) ? (match?.[1] === '-' ? -total : total) : undefined;
}
