/**
 * What the custom executor is configured with: `[runners.custom]` (agent/config/custom-schema.ts reads
 * it into this shape), times in milliseconds, an empty program meaning "none".
 */

export interface CustomOptions {
  config_exec: string;
  config_args: string[];
  config_exec_timeout: number;
  prepare_exec: string;
  prepare_args: string[];
  prepare_exec_timeout: number;
  run_exec: string;
  run_args: string[];
  cleanup_exec: string;
  cleanup_args: string[];
  cleanup_exec_timeout: number;
  graceful_kill_timeout: number;
  force_kill_timeout: number;
}

/** GitLab Runner 19's defaults (executors/custom/consts.go, helpers/process/killer.go). */
export const CUSTOM_DEFAULTS = {
  configTimeoutMs: 60 * 60_000,
  prepareTimeoutMs: 60 * 60_000,
  cleanupTimeoutMs: 60 * 60_000,
  gracefulKillMs: 10 * 60_000,
  forceKillMs: 10_000,
} as const;

/** The exit codes a driver is told to use (BUILD_FAILURE_EXIT_CODE, SYSTEM_FAILURE_EXIT_CODE). */
export const BUILD_FAILURE_EXIT_CODE = 1;
export const SYSTEM_FAILURE_EXIT_CODE = 2;
