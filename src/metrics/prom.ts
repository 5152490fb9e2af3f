/**
 * prom-client, loaded by its parts. Its index also loads the Pushgateway (https), the cluster
 * aggregator and summaries, and its `collectDefaultMetrics` loads `@opentelemetry/api` for CPU
 * exemplars: ~10 MB resident in a bare Node and ~4 MB in the idle daemon, for nothing we serve.
 * So the classes come from their own modules, and the default process and Node metrics are
 * prom-client's own collectors, one by one, except process CPU, which is three counters here (the
 * same names and help as prom-client's). test/metrics/prom.test.ts checks that every default
 * metric is still served.
 */
import { createRequire } from 'node:module';
import type * as Prom from 'prom-client';

const require = createRequire(import.meta.url);

export const Registry: typeof Prom.Registry = require('prom-client/lib/registry');
export const Counter: typeof Prom.Counter = require('prom-client/lib/counter');
export const Gauge: typeof Prom.Gauge = require('prom-client/lib/gauge');
export const Histogram: typeof Prom.Histogram = require('prom-client/lib/histogram');
export type Registry = Prom.Registry;
export type Counter<T extends string = string> = Prom.Counter<T>;
export type Gauge<T extends string = string> = Prom.Gauge<T>;
export type Histogram<T extends string = string> = Prom.Histogram<T>;

type Collector = (registry: Prom.Registry, config: Prom.DefaultMetricsCollectorConfiguration<Prom.RegistryContentType>) => void;

/** prom-client's default collectors but CPU, by module name (as its `defaultMetrics.js` lists them). */
const COLLECTORS = [
  'processStartTime',
  'osMemoryHeap',
  'processOpenFileDescriptors',
  'processMaxFileDescriptors',
  'eventLoopLag',
  'processResources',
  'processHandles',
  'processRequests',
  'heapSizeAndUsed',
  'heapSpacesSizeAndUsed',
  'version',
  'gc',
] as const;

/**
 * Sampling of the event loop lag, in ms. prom-client's default of 10 wakes an idle process 100 times
 * a second; a runner's lag matters from tens of milliseconds up.
 */
const EVENT_LOOP_PRECISION_MS = 100;

/** The process and Node metrics prom-client's `collectDefaultMetrics` serves, into `registry`. */
export function collectProcessMetrics(registry: Prom.Registry): void {
  const config = { register: registry, eventLoopMonitoringPrecision: EVENT_LOOP_PRECISION_MS };
  for (const name of COLLECTORS) {
    if (name === 'processResources' && typeof (process as { getActiveResourcesInfo?: unknown }).getActiveResourcesInfo !== 'function') continue;
    (require(`prom-client/lib/metrics/${name}`) as Collector)(registry, config);
  }
  processCpu(registry);
}

function processCpu(registry: Prom.Registry): void {
  const registers = [registry];
  let last = process.cpuUsage();
  const user = new Counter({
    name: 'process_cpu_user_seconds_total',
    help: 'Total user CPU time spent in seconds.',
    registers,
    // This one collector brings all three up to date.
    collect() {
      const now = process.cpuUsage();
      const userSeconds = (now.user - last.user) / 1e6;
      const systemSeconds = (now.system - last.system) / 1e6;
      last = now;
      user.inc(userSeconds);
      system.inc(systemSeconds);
      total.inc(userSeconds + systemSeconds);
    },
  });
  const system = new Counter({ name: 'process_cpu_system_seconds_total', help: 'Total system CPU time spent in seconds.', registers });
  const total = new Counter({ name: 'process_cpu_seconds_total', help: 'Total user and system CPU time spent in seconds.', registers });
}
