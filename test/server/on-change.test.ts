/** `onChange`: in-process callers (exec's wait for the pipeline) hear of each change of the server's state. */
import { describe, expect, it } from 'vitest';
import { useTestServer, type TestServer } from '../helpers/server.js';

let server: TestServer;
useTestServer((started) => (server = started));
const t = (): TestServer => server;

describe('ReferenceServer.onChange', () => {
  it('calls its listener after a pipeline is created and a job is canceled, and no more once removed', async () => {
    let calls = 0;
    let heard = (): void => undefined;
    const stop = t().server.onChange(() => {
      calls += 1;
      heard();
    });
    const next = (): Promise<void> => new Promise((resolve) => (heard = resolve));

    let change = next();
    const pipeline = await t().pipeline('job:\n  script: echo hi\n');
    await change;
    expect(calls).toBeGreaterThan(0);

    const before = calls;
    change = next();
    t().server.cancelJob(pipeline.jobs[0]!.id);
    await change;
    expect(calls).toBeGreaterThan(before);

    stop();
    const after = calls;
    await t().pipeline('job:\n  script: echo again\n');
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(calls).toBe(after);
  });
});
