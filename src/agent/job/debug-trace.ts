/**
 * `debug_trace_disabled`: the runner refuses CI_DEBUG_TRACE (and CI_DEBUG_SERVICES) as GitLab Runner
 * does, with its warning in the job log, and the job runs without the trace.
 */
import type { RunnerConfig } from '../config/schema.js';
import type { JobControls } from './control-variables.js';
import { warning } from './messages.js';
import { isTruthy, variableValue, type JobVariable } from './variables.js';

/** `controls` with the debug trace off when the runner disables it; the refusal is written to the log. */
export function refuseDebugTrace(controls: JobControls, runner: Pick<RunnerConfig, 'debug_trace_disabled'>, vars: readonly JobVariable[], write: (text: string) => void): JobControls {
  if (!runner.debug_trace_disabled) return controls;
  const refused = [
    ...(controls.debugTrace ? ['CI_DEBUG_TRACE: usage is disabled on this Runner'] : []),
    ...(isTruthy(variableValue(vars, 'CI_DEBUG_SERVICES')) ? ['CI_DEBUG_SERVICES: usage is disabled on this Runner'] : []),
  ];
  if (refused.length > 0) write(warning(`WARNING: ${refused.join('\n')}`));
  return { ...controls, debugTrace: false };
}
