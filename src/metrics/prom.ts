/**
 * The process and Node metrics the daemon's and the server's /metrics serve: prom-client's
 * `collectDefaultMetrics`, with one setting of ours.
 */
import { collectDefaultMetrics, type Registry } from 'prom-client';

/**
 * Sampling of the event loop lag, in ms. prom-client's default of 10 wakes an idle process 100 times
 * a second; a runner's lag matters from tens of milliseconds up.
 */
const EVENT_LOOP_PRECISION_MS = 100;

/** prom-client's default process and Node metrics, into `registry`. */
export function collectProcessMetrics(registry: Registry): void {
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: EVENT_LOOP_PRECISION_MS });
}
