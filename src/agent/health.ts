/**
 * GitLab Runner's unhealthy pause of a runner worker (its commands/health_helper.go): a job request the
 * coordinator refuses (403) or that gets no answer at all (a network error) is unhealthy, any answer
 * else healthy. After `unhealthy_requests_limit` unhealthy requests in a row (default 3) the entry stops
 * asking for jobs until `unhealthy_interval` (default 60 min) has passed since its last healthy answer
 * (or last forced check); then one request is forced. Both moments are logged with GitLab Runner's words.
 */
import type { Logger } from '../log/index.js';
import type { RunnerConfig } from './config/schema.js';
import { formatGoDuration } from '../util/duration.js';
import { shortToken } from '../util/short-token.js';

export interface Health {
  /** Unhealthy requests in a row. */
  failures: number;
  /** The last healthy answer or forced check (ms since the epoch). */
  lastCheck: number;
}

type Runner = Pick<RunnerConfig, 'url' | 'token' | 'unhealthy_requests_limit' | 'unhealthy_interval'>;

/** GitLab Runner's UniqueID: the URL and the short token (never the whole token). */
function runnerId(runner: Runner): string {
  return `${runner.url}${shortToken(runner.token)}`;
}

/** Seconds as Go prints a duration: `1h0m0s`, `30m0s`, `45s`, `1.5s`. */
export function goDuration(seconds: number): string {
  return formatGoDuration(seconds * 1000);
}

/**
 * How long the entry must still wait before its next job request; 0 when it may ask now. When an
 * unhealthy entry's pause is over, the forced check is logged and its count starts again.
 */
export function unhealthyWait(health: Health, runner: Runner, log: Logger, now = Date.now()): number {
  if (health.failures < runner.unhealthy_requests_limit) return 0;
  const left = health.lastCheck + runner.unhealthy_interval * 1000 - now;
  if (left > 0) return left;
  log.warn(
    { unhealthy_requests: health.failures, unhealthy_requests_limit: runner.unhealthy_requests_limit, unhealthy_interval: goDuration(runner.unhealthy_interval) },
    `Runner "${runnerId(runner)}" is not healthy, but check for a new job will be forced!`,
  );
  health.failures = 0;
  health.lastCheck = now;
  return 0;
}

/** Records a job request's health; the request that reaches the limit logs the pause. */
export function markHealth(health: Health, healthy: boolean, runner: Runner, log: Logger, now = Date.now()): void {
  if (healthy) {
    health.failures = 0;
    health.lastCheck = now;
    return;
  }
  health.failures += 1;
  if (health.failures >= runner.unhealthy_requests_limit) {
    log.error(
      { unhealthy_requests: health.failures, unhealthy_requests_limit: runner.unhealthy_requests_limit },
      `Runner "${runnerId(runner)}" is unhealthy and will be disabled for ${goDuration(runner.unhealthy_interval)} seconds!`,
    );
  }
}
