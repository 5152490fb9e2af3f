/**
 * The process and Node metrics of the daemon's and the server's /metrics (src/metrics/prom.ts): the
 * names, types and help that dashboards and alerts are written against, with values.
 */
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { collectProcessMetrics } from '../../src/metrics/prom.js';

/** `name type` of every `# TYPE` line. */
function types(text: string): string[] {
  return text.split('\n').filter((line) => line.startsWith('# TYPE ')).map((line) => line.slice('# TYPE '.length));
}

describe('process metrics', () => {
  it('serves the standard process and Node metrics, with help and values', async () => {
    const registry = new Registry();
    collectProcessMetrics(registry);
    // A little CPU so the counters move.
    let x = 0;
    for (let i = 0; i < 1e6; i += 1) x += i;
    expect(x).toBeGreaterThan(0);
    const text = await registry.metrics();
    expect(types(text)).toEqual(expect.arrayContaining([
      'process_cpu_user_seconds_total counter',
      'process_cpu_system_seconds_total counter',
      'process_cpu_seconds_total counter',
      'process_start_time_seconds gauge',
      'process_resident_memory_bytes gauge',
      'process_open_fds gauge',
      'process_max_fds gauge',
      'nodejs_eventloop_lag_p99_seconds gauge',
      'nodejs_active_handles_total gauge',
      'nodejs_heap_size_used_bytes gauge',
      'nodejs_heap_space_size_used_bytes gauge',
      'nodejs_version_info gauge',
      'nodejs_gc_duration_seconds histogram',
    ]));
    expect(text).toContain('# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.');
    expect(text).toContain('# HELP process_resident_memory_bytes Resident memory size in bytes.');
    expect(Number(/^process_cpu_seconds_total (\S+)$/m.exec(text)?.[1])).toBeGreaterThan(0);
    expect(Number(/^process_resident_memory_bytes (\d+)$/m.exec(text)?.[1])).toBeGreaterThan(1e6);
    expect(text).toMatch(/^nodejs_eventloop_lag_p99_seconds \S+$/m);
    registry.clear();
  });

  it('serves them from each registry it is given, without the global one', async () => {
    const [a, b] = [new Registry(), new Registry()];
    collectProcessMetrics(a);
    collectProcessMetrics(b);
    const [textA, textB] = [await a.metrics(), await b.metrics()];
    expect(types(textA)).toEqual(types(textB));
    expect(types(textA).length).toBeGreaterThan(10);
    a.clear();
    b.clear();
  });
});
