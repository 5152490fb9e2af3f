/**
 * Variable values made to be slow (issue 34, item 4): a value a backtracking search would take minutes
 * on (a long run of URL-scheme characters, `${` repeated, a masked value of line breaks, a masked
 * value of one repeated letter printed by the job) must not stop the daemon's event loop: the job
 * runs, its log is masked, and a timer keeps firing meanwhile. The bound asserted (5 s without a
 * tick) is far above what a loaded machine shows; the old code blocked for minutes. The same for
 * artifacts globs made to be slow.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runnerSchema } from '../../src/agent/config/schema.js';
import { defaultServices } from '../../src/agent/services.js';
import { silentLogger } from '../../src/log/index.js';
import { workDirs } from '../cli/helpers.js';
import { runOnce } from '../helpers/run-once.js';
import type { PipelineView } from '../../src/server/index.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

let t: TestServer;
let token: string;
beforeAll(async () => {
  t = await startTestServer();
  ({ token } = await t.registerRunner());
});
afterAll(async () => {
  await t.close();
});

/** The longest time between two ticks of a 50 ms timer while `work` runs. */
async function longestStall<T>(work: () => Promise<T>): Promise<{ result: T; stallMs: number }> {
  let last = performance.now();
  let stallMs = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    stallMs = Math.max(stallMs, now - last);
    last = now;
  }, 50);
  try {
    const result = await work();
    stallMs = Math.max(stallMs, performance.now() - last);
    return { result, stallMs };
  } finally {
    clearInterval(timer);
  }
}

/** Runs the first job of `pipeline` on a shell runner; its trace (it must succeed) and the longest stall meanwhile. */
async function runWatched(pipeline: PipelineView): Promise<{ trace: string; stallMs: number }> {
  const d = await workDirs();
  const runner = runnerSchema.parse({ name: 'slow-input', url: t.url, token, builds_dir: d.builds, cache_dir: d.cache, trace_update_interval: 0.2 });
  const never = new AbortController().signal;
  const { stallMs } = await longestStall(() => runOnce({ runner, services: defaultServices(silentLogger()), waitTimeoutMs: 20_000, pollIntervalMs: 200, stopWaiting: never, stopJob: never }));
  const id = pipeline.jobs[0]!.id;
  const trace = (await t.server.getTrace(id)).toString('utf8');
  expect(t.server.getJob(id)?.status, trace.slice(-2000)).toBe('success');
  return { trace, stallMs };
}

const SIZE = 150 * 1024;

describe('variable values made to be slow', () => {
  it('keep the event loop turning while a job with them is set up, run and masked', async () => {
    const url = 'https://bot:pw-in-the-url-9@mirror.example/x';
    const variables = {
      SCHEME_RUN: `${'a'.repeat(SIZE)} ${url}`,
      OPEN_BRACES: '${'.repeat(SIZE / 2),
      BREAKS: `x${'\n'.repeat(SIZE)}y`,
      REPEATED: 'a'.repeat(SIZE),
    };
    // File variables: Linux refuses an environment string over 128 KiB to every program started.
    const flags = { SCHEME_RUN: { masked: false, file: true }, OPEN_BRACES: { masked: false, file: true }, BREAKS: { masked: true, file: true }, REPEATED: { masked: true, file: true } };
    const yaml = [
      'j:',
      '  script:',
      '    - \'echo "url: $(tr " " "\\n" < "$SCHEME_RUN" | tail -n 1)"\'',
      '    - \'echo "braces: $(wc -c < "$OPEN_BRACES")"\'',
      '    - \'printf "repeated: %s.\\n" "$(cat "$REPEATED")"\'',
      '    - \'printf "a%.0s" $(seq 1000) && echo " short run"\'',
      '',
    ].join('\n');
    const { trace, stallMs } = await runWatched(await t.server.createPipeline({ project: t.projectName, config: yaml, variables, variableFlags: flags }));
    expect(trace).toContain('url: https://bot:[MASKED]@mirror.example/x');
    expect(trace).toContain(`braces: ${SIZE}`);
    expect(trace).toContain('repeated: [MASKED].');
    // Output that is only the start of a masked value is not held back for ever.
    expect(trace).toMatch(/\na{1000} short run/);
    expect(stallMs, `the event loop stood still for ${Math.round(stallMs)} ms`).toBeLessThan(5_000);
  }, 300_000);

  it('keep it turning while artifacts are selected with globs made to be slow (a glob library takes exponential time on them)', async () => {
    const slow = `${'*a'.repeat(12)}*b`;
    const yaml = [
      'j:',
      '  script:',
      `    - touch ${'a'.repeat(36)} keep.txt`,
      '  artifacts:',
      `    paths: ['${slow}', 'keep.txt', '*.txt']`,
      `    exclude: ['${slow}']`,
      '',
    ].join('\n');
    const { trace, stallMs } = await runWatched(await t.pipeline(yaml));
    expect(trace).toContain('Archived 1 file(s)');
    expect(stallMs, `the event loop stood still for ${Math.round(stallMs)} ms`).toBeLessThan(5_000);
  }, 300_000);
});
