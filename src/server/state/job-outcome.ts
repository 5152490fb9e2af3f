/**
 * What the server learns from a finished job's trace, since API v1's final update carries only
 * `state` and the trace: the failure reason GitLab's `retry:when` names (from the runner's last
 * `ERROR: Job failed…` line — ours and GitLab Runner 1.x's, which said `Build failed`) and the
 * `coverage:` regex's last match. Read line by line once the whole trace is stored.
 */
import { stripVTControlCharacters } from 'node:util';
import type { ServerContext } from '../context.js';
import type { BuildRecord } from './store.js';

export interface JobOutcome {
  failureReason?: string;
  coverage?: number;
  /** The script's exit status, when the failure line names one (`exit status 3`, GitLab Runner's `exit code 3`). */
  exitCode?: number;
}

/** The exit status a job's last failure line names, if any. */
export function exitCodeOf(line: string | undefined): number | undefined {
  const code = line === undefined ? undefined : /(?:Job|Build) failed: exit (?:status|code) (\d+)/.exec(line)?.[1];
  return code === undefined ? undefined : Number(code);
}

/** A job's last failure line → GitLab's failure reason; `unknown_failure` when none fits. */
export function failureReasonOf(line: string | undefined): string {
  if (line === undefined) return 'unknown_failure';
  if (/failed \(system failure\)/.test(line)) return 'runner_system_failure';
  const reason = /(?:Job|Build) failed: (.*)$/.exec(line)?.[1] ?? '';
  if (/^(exit status |exit code |killed by )/.test(reason)) return 'script_failure';
  if (/^execution took longer than /.test(reason)) return 'job_execution_timeout';
  if (/^(downloading|uploading) artifacts failed/.test(reason)) return 'api_failure';
  if (/^runner error: |could not start the job|^getting sources failed/.test(reason)) return 'runner_system_failure';
  return 'unknown_failure';
}

const FAILURE_LINE = /(?:Job|Build) failed/;
/**
 * The coverage regex sees at most this much of a line. JavaScript regexes backtrack (GitLab uses RE2
 * for this reason): a bad pattern on a huge line could hold the server for long; a coverage figure
 * sits in a short line anyway.
 */
const COVERAGE_LINE_LIMIT = 4096;

/** The percentage in a coverage match: its first group if any, else the first number in it. */
function percentage(match: RegExpExecArray): number | undefined {
  const text = match.slice(1).find((group) => group !== undefined) ?? match[0];
  const number = /\d+(?:\.\d+)?/.exec(text)?.[0];
  if (number === undefined) return undefined;
  const value = Number(number);
  return Number.isFinite(value) && value >= 0 && value <= 100 ? value : undefined;
}

/** Scans the stored trace of `build` for its failure reason (when `failed`) and its coverage. */
export async function readOutcome(ctx: ServerContext, build: BuildRecord, failed: boolean): Promise<JobOutcome> {
  const spec = build.job.coverage;
  if (!failed && spec === undefined) return {};
  const regex = spec ? new RegExp(spec.source, spec.flags.replace(/g/g, '')) : undefined;
  let lastFailure: string | undefined;
  let coverage: number | undefined;
  await ctx.traces.eachLine(build.id, (raw) => {
    const line = stripVTControlCharacters(raw);
    if (failed && FAILURE_LINE.test(line) && /ERROR:/.test(line)) lastFailure = line;
    const match = regex?.exec(line.length > COVERAGE_LINE_LIMIT ? line.slice(0, COVERAGE_LINE_LIMIT) : line);
    if (match) coverage = percentage(match) ?? coverage;
  });
  const exitCode = failed ? exitCodeOf(lastFailure) : undefined;
  return {
    ...(failed ? { failureReason: failureReasonOf(lastFailure) } : {}),
    ...(exitCode !== undefined ? { exitCode } : {}),
    ...(coverage !== undefined ? { coverage } : {}),
  };
}
