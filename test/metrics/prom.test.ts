/**
 * The daemon's and server's process metrics (src/metrics/prom.ts) are prom-client's defaults, loaded
 * by their parts: the same metric names, types and help as `collectDefaultMetrics`, with values.
 */
import * as promClient from 'prom-client';
import { describe, expect, it } from 'vitest';
import { collectProcessMetrics, Counter, Registry } from '../../src/metrics/prom.js';

/** `# HELP` and `# TYPE` lines of an exposition, sorted. */
function headers(text: string): string[] {
  return text.split('\n').filter((line) => line.startsWith('# ')).sort();
}

describe('process metrics by parts', () => {
  it('serves every metric prom-client\'s collectDefaultMetrics serves, with the same help and type', async () => {
    const ours = new Registry();
    collectProcessMetrics(ours);
    const theirs = new promClient.Registry();
    promClient.collectDefaultMetrics({ register: theirs });
    // A little CPU so the counters move.
    let x = 0;
    for (let i = 0; i < 1e6; i += 1) x += i;
    expect(x).toBeGreaterThan(0);
    const [a, b] = [await ours.metrics(), await theirs.metrics()];
    expect(headers(a)).toEqual(headers(b));
    expect(a).toMatch(/^process_cpu_seconds_total [0-9.e-]+$/m);
    expect(Number(/^process_cpu_seconds_total (\S+)$/m.exec(a)?.[1])).toBeGreaterThan(0);
    expect(a).toMatch(/^process_resident_memory_bytes \d+$/m);
    expect(a).toMatch(/^nodejs_eventloop_lag_p99_seconds \S+$/m);
    ours.clear();
    theirs.clear();
  });

  it('gives classes that are prom-client\'s own', () => {
    const registry = new Registry();
    const counter = new Counter({ name: 'x_total', help: 'x', registers: [registry] });
    expect(counter).toBeInstanceOf(promClient.Counter);
    expect(registry).toBeInstanceOf(promClient.Registry);
  });
});
