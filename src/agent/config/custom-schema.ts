/**
 * `[runners.custom]`, the custom executor's table: ci-runner has no custom executor yet (issue 40), so
 * `executor = "custom"` is refused (runner-schema.ts) and the table is ignored with a warning.
 * CUSTOM_KEYS gives each of GitLab Runner 19's keys of the table a status (keys.ts).
 */
import { warnedTable } from './keys.js';

export const CUSTOM_REASON = 'ci-runner has no custom executor yet';

export const CUSTOM_KEYS = warnedTable(CUSTOM_REASON, [
  'config_exec', 'config_args', 'config_exec_timeout', 'prepare_exec', 'prepare_args', 'prepare_exec_timeout', 'run_exec', 'run_args',
  'cleanup_exec', 'cleanup_args', 'cleanup_exec_timeout', 'graceful_kill_timeout', 'force_kill_timeout',
]);
