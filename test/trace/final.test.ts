import { readFile, rename, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log/index.js';
import { isPending, readDeliveryState, resumeDelivery, SPOOL_FILE, STATE_FILE } from '../../src/trace/index.js';
import { runningJob, type RunningJob, sampleOutput, startJobTrace, waitFor } from './job.js';

let job: RunningJob | undefined;
afterEach(async () => {
  await job?.close();
  job = undefined;
});

describe('the final update', () => {
  it('retries the final PUT after server errors until the server has it', async () => {
    job = await runningJob();
    const trace = await startJobTrace(job);
    trace.write('all done\n');
    job.ts.server.faults.add({ endpoint: 'update_build', action: 'error', status: 503, count: 2 });
    job.ts.server.faults.add({ endpoint: 'patch_trace', action: 'error', status: 503 });
    expect(await trace.finish('success')).toEqual({ delivered: true, status: 200 });
    const finals = job.client.calls.filter((call) => call.kind === 'full' && call.state === 'success');
    // The server answers the fault before reading the streamed body and closes the connection, so
    // the client may see either the 503 or the cut connection (-1).
    expect(finals).toHaveLength(3);
    expect([503, -1]).toContain(finals[0]?.status);
    expect([503, -1]).toContain(finals[1]?.status);
    expect(finals[2]?.status).toBe(200);
    expect((await job.ts.server.getTrace(job.build.id)).toString()).toBe('all done\n');
    expect(job.ts.server.getJob(job.build.id)?.status).toBe('success');
  });

  it('gives up after job_status_final_update_retry_limit failed attempts, saying so', async () => {
    job = await runningJob();
    const lines: string[] = [];
    const destination = new Writable({ write: (chunk: Buffer, _encoding, done) => (lines.push(chunk.toString()), done()) });
    const trace = await startJobTrace(job, { finalUpdateRetryLimit: 2, logger: createLogger({ level: 'debug', destination }) });
    trace.write('all done\n');
    job.ts.server.faults.add({ endpoint: 'update_build', action: 'error', status: 503, count: 5 });
    job.ts.server.faults.add({ endpoint: 'patch_trace', action: 'error', status: 503 });
    expect((await trace.finish('success')).delivered).toBe(false);
    expect(job.client.calls.filter((call) => call.kind === 'full' && call.state === 'success')).toHaveLength(2);
    expect(lines.join('')).toContain('2 attempts failed (job_status_final_update_retry_limit)');
  });

  it('says an applied final update whose answer was lost is most likely applied, not refused', async () => {
    job = await runningJob();
    const lines: string[] = [];
    const destination = new Writable({ write: (chunk: Buffer, _encoding, done) => (lines.push(chunk.toString()), done()) });
    const trace = await startJobTrace(job, { logger: createLogger({ level: 'debug', destination }) });
    trace.write('all done\n');
    job.ts.server.faults.add({ endpoint: 'update_build', action: 'apply_then_error', status: 502, count: 1 });
    const result = await trace.finish('success');
    expect(result.delivered).toBe(false);
    expect(job.ts.server.getJob(job.build.id)?.status).toBe('success');
    const log = lines.join('');
    expect(log).toContain('most likely applied by an earlier attempt whose answer was lost');
    expect(log).not.toContain('refused the final update');
  });

  it('sends the tail by PATCH when the server refuses the whole trace as too large, then the state alone', async () => {
    job = await runningJob();
    const trace = await startJobTrace(job, { updateIntervalMs: 60_000, outputLimitKiB: 200_000 });
    trace.write('first line\n');
    await waitFor('the first PATCH', async () => (await job!.ts.server.getTrace(job!.build.id)).length > 0);
    // Past the reference server's 64 MiB cap on a PUT body, as GitLab's own limits would be.
    const tail = sampleOutput(65 * 1024 * 1024, 7);
    trace.write(tail);
    // The job's end tries the tail by PATCH once first; that fails here, so the update carries the whole trace.
    job.ts.server.faults.add({ endpoint: 'patch_trace', action: 'error', status: 503, count: 1 });
    expect((await trace.finish('success')).delivered).toBe(true);
    expect(job.client.calls.filter((call) => call.state === 'success').map((call) => [call.kind, call.status])).toEqual([['full', 413], ['state', 200]]);
    const stored = await job.ts.server.getTrace(job.build.id);
    expect(stored.equals(Buffer.concat([Buffer.from('first line\n'), tail]))).toBe(true);
    expect(job.ts.server.getJob(job.build.id)?.status).toBe('success');
  });

  it('v1: PATCHes the tail at the job\'s end in parts of up to 8 MiB when the trace is over 1 MiB, then sends the state alone', async () => {
    job = await runningJob();
    const trace = await startJobTrace(job, { updateIntervalMs: 60_000, outputLimitKiB: 200_000 });
    const head = sampleOutput(1024 * 1024, 5);
    trace.write(head);
    await waitFor('the first PATCH', async () => (await job!.ts.server.getTrace(job!.build.id)).length > 0);
    const tail = sampleOutput(20 * 1024 * 1024, 3);
    trace.write(tail);
    expect((await trace.finish('success')).delivered).toBe(true);
    const stored = await job.ts.server.getTrace(job.build.id);
    expect(stored.equals(Buffer.concat([head, tail]))).toBe(true);
    expect(job.client.patches().map((call) => call.bytes)).toEqual([head.length, 8 * 1024 * 1024, 8 * 1024 * 1024, tail.length - 16 * 1024 * 1024]);
    expect(job.client.calls.filter((call) => call.state === 'success').map((call) => call.kind)).toEqual(['state']);
    expect(job.ts.server.getJob(job.build.id)?.status).toBe('success');
  });

  it('v1: sends the state alone when the live PATCHes delivered the whole trace, and a short unsent tail with the whole trace', async () => {
    job = await runningJob();
    const trace = await startJobTrace(job, { updateIntervalMs: 60_000 });
    trace.write('all of it\n');
    await waitFor('the first PATCH', async () => (await job!.ts.server.getTrace(job!.build.id)).length > 0);
    expect((await trace.finish('success')).delivered).toBe(true);
    expect(job.client.calls.filter((call) => call.state === 'success').map((call) => call.kind)).toEqual(['state']);
    expect((await job.ts.server.getTrace(job.build.id)).toString()).toBe('all of it\n');
    await job.close();

    job = await runningJob();
    const second = await startJobTrace(job, { updateIntervalMs: 60_000 });
    second.write('first\n');
    await waitFor('the first PATCH', async () => (await job!.ts.server.getTrace(job!.build.id)).length > 0);
    second.write('second\n');
    expect((await second.finish('success')).delivered).toBe(true);
    expect(job.client.patches()).toHaveLength(1);
    expect(job.client.calls.filter((call) => call.state === 'success').map((call) => call.kind)).toEqual(['full']);
    expect((await job.ts.server.getTrace(job.build.id)).toString()).toBe('first\nsecond\n');
  });

  it('v1: sends the whole trace with the state when the tail could not go by PATCH', async () => {
    job = await runningJob();
    const trace = await startJobTrace(job, { updateIntervalMs: 60_000 });
    const head = sampleOutput(1024 * 1024, 5);
    trace.write(head);
    await waitFor('the first PATCH', async () => (await job!.ts.server.getTrace(job!.build.id)).length > 0);
    trace.write('second line\n');
    job.ts.server.faults.add({ endpoint: 'patch_trace', action: 'error', status: 503, count: 1 });
    expect((await trace.finish('success')).delivered).toBe(true);
    expect(job.client.calls.filter((call) => call.state === 'success').map((call) => call.kind)).toEqual(['full']);
    expect((await job.ts.server.getTrace(job.build.id)).equals(Buffer.concat([head, Buffer.from('second line\n')]))).toBe(true);
  });

  it('gives up at the deadline, records the pending update, and resumeDelivery sends it later', async () => {
    job = await runningJob();
    const trace = await startJobTrace(job, { finalUpdateDeadlineMs: 1500 });
    trace.write('line one\nline two\n');
    const faultId = job.ts.server.faults.add({ endpoint: 'update_build', action: 'error', status: 502 });
    job.ts.server.faults.add({ endpoint: 'patch_trace', action: 'error', status: 502 });
    const result = await trace.finish('failed');
    expect(result.delivered).toBe(false);
    expect([502, -1]).toContain(result.status);
    // The outcome reaches the record after the job's end, before the state dir may go.
    await trace.settled();
    const record = await readDeliveryState(job.stateDir);
    expect(record).toMatchObject({ buildId: job.build.id, finalState: 'failed', delivered: false, finalStatus: result.status });
    expect(isPending(record!)).toBe(true);
    expect(job.ts.server.getJob(job.build.id)?.status).toBe('running');

    // A "restarted runner": a fresh client, the same state directory.
    job.ts.server.faults.remove(faultId);
    const resumed = await resumeDelivery(job.stateDir, job.client, job.runnerToken, AbortSignal.timeout(30_000));
    expect(resumed).toEqual({ delivered: true, status: 200 });
    expect((await job.ts.server.getTrace(job.build.id)).toString()).toBe('line one\nline two\n');
    expect(job.ts.server.getJob(job.build.id)?.status).toBe('failed');
    expect(await readDeliveryState(job.stateDir)).toMatchObject({ delivered: true, finalStatus: 200 });
    // Nothing is owed any more.
    expect(await resumeDelivery(job.stateDir, job.client, job.runnerToken, AbortSignal.timeout(30_000))).toBeUndefined();
  });

  it('has the final state in the delivery record before the final update goes out', async () => {
    job = await runningJob();
    const current = job;
    // What the record says as each update that ends the job (not v1's `running`) goes out.
    const seen: (string | undefined)[] = [];
    const recordedState = async (state: string | undefined): Promise<void> => {
      if (state !== 'running') seen.push((await readDeliveryState(current.stateDir))?.finalState);
    };
    const { client } = current;
    const withTrace = client.updateBuildWithTrace.bind(client);
    const stateOnly = client.updateBuild.bind(client);
    client.updateBuildWithTrace = async (id, token, state, text, signal) => (await recordedState(state), withTrace(id, token, state, text, signal));
    client.updateBuild = async (id, token, update, signal) => (await recordedState(update.state), stateOnly(id, token, update, signal));
    const trace = await startJobTrace(current);
    trace.write('the end\n');
    expect((await trace.finish('failed')).delivered).toBe(true);
    expect(seen).toEqual(['failed']);
  });

  it('resumes a job that never finished only when told which state to report', async () => {
    job = await runningJob();
    const trace = await startJobTrace(job, { outputLimitKiB: 1 });
    trace.write('x'.repeat(1500));
    // Wait for the live trace (limit + notice) to be acknowledged and recorded; then "crash".
    const current = job;
    await waitForRecord(async () => ((await readDeliveryState(current.stateDir))?.sentOffset ?? 0) > 1024);
    expect(await resumeDelivery(job.stateDir, job.client, job.runnerToken, AbortSignal.timeout(30_000))).toBeUndefined();
    const resumed = await resumeDelivery(job.stateDir, job.client, job.runnerToken, AbortSignal.timeout(30_000), {
      unfinishedState: 'failed',
    });
    expect(resumed).toEqual({ delivered: true, status: 200 });
    const stored = (await job.ts.server.getTrace(job.build.id)).toString();
    expect(stored.startsWith('x'.repeat(1024) + '\n')).toBe(true);
    // The limit notice, then why the job stopped: the sent trace ended at the limit, not at the crash.
    expect(stored).toMatch(/exceeded limit of 1024 bytes[^\n]*\n\u001b\[0;33mWARNING: The runner stopped \(killed or crashed\) while this job was running[^\n]*\n[^\n]*ERROR: Job failed \(system failure\)[^\n]*\n$/);
    expect(job.ts.server.getJob(job.build.id)?.status).toBe('failed');
    await trace.finish('failed');
  });
});

describe('recovering a job the runner lost mid-run', () => {
  it('ends its trace with why it stopped and when it was recovered, after the last output', async () => {
    job = await runningJob();
    const daemon = new AbortController();
    const trace = await startJobTrace(job, { signal: daemon.signal });
    trace.write('step 1 done\nstep 2: 42%');
    const current = job;
    await waitForRecord(async () => ((await readDeliveryState(current.stateDir))?.sentOffset ?? 0) > 0);
    daemon.abort(); // the runner dies: nothing more is sent live, and no final update
    const recoveredAt = new Date('2026-11-23T09:01:13.456Z');
    const resumed = await resumeDelivery(job.stateDir, job.client, job.runnerToken, AbortSignal.timeout(30_000), {
      unfinishedState: 'failed',
      unfinishedDetail: 'killed 2 processes the job left behind',
      now: () => recoveredAt,
    });
    expect(resumed).toEqual({ delivered: true, status: 200 });
    const stored = (await job.ts.server.getTrace(job.build.id)).toString();
    // The job's last line had no newline: the explanation starts on a line of its own.
    const output = 'step 1 done\nstep 2: 42%\n';
    expect(stored.startsWith(output)).toBe(true);
    const [warning, error, rest] = stored.slice(output.length).split('\n');
    expect(warning).toMatch(/^\u001b\[0;33mWARNING: The runner stopped \(killed or crashed\) while this job was running; its last output above was written at \d{4}-\d\d-\d\dT[\d:.]+Z\.\u001b\[0;m$/);
    expect(error).toBe(
      '\u001b[31;1mERROR: Job failed (system failure): the runner recovered the job at 2026-11-23T09:01:13.456Z when it started again, ' +
        'killed 2 processes the job left behind, and reports it failed.\u001b[0;m',
    );
    expect(rest).toBe('');
    expect(job.ts.server.getJob(job.build.id)?.status).toBe('failed');
  });

  it('sends the same explanation on a later attempt when the first could not deliver it', async () => {
    job = await runningJob();
    const daemon = new AbortController();
    const trace = await startJobTrace(job, { signal: daemon.signal });
    trace.write('working\n');
    daemon.abort();
    const fault = job.ts.server.faults.add({ endpoint: 'update_build', action: 'error', status: 502 });
    const first = await resumeDelivery(job.stateDir, job.client, job.runnerToken, AbortSignal.timeout(30_000), {
      unfinishedState: 'failed',
      deadlineMs: 1500,
      now: () => new Date('2026-11-23T09:00:00.000Z'),
    });
    expect(first?.delivered).toBe(false);
    expect(await readDeliveryState(job.stateDir)).toMatchObject({ finalState: 'failed', delivered: false });
    // The next restart: same record, a later clock.
    job.ts.server.faults.remove(fault);
    const second = await resumeDelivery(job.stateDir, job.client, job.runnerToken, AbortSignal.timeout(30_000), {
      unfinishedState: 'failed',
      now: () => new Date('2026-11-23T10:00:00.000Z'),
    });
    expect(second).toEqual({ delivered: true, status: 200 });
    const stored = (await job.ts.server.getTrace(job.build.id)).toString();
    expect(stored.startsWith('working\n\u001b[0;33mWARNING: The runner stopped')).toBe(true);
    expect(stored).toContain('recovered the job at 2026-11-23T09:00:00.000Z');
    expect(stored.split('WARNING: The runner stopped').length).toBe(2);
    expect(stored).not.toContain('10:00:00');
  });
});

describe('resuming from a state dir a job could have written', () => {
  /** A job the runner lost after its trace was acknowledged: the record and spool a restart finds. */
  async function lostJob(): Promise<RunningJob> {
    const lost = await runningJob();
    job = lost;
    const daemon = new AbortController();
    const trace = await startJobTrace(lost, { signal: daemon.signal });
    trace.write('working\n');
    await waitForRecord(async () => ((await readDeliveryState(lost.stateDir))?.sentOffset ?? 0) > 0);
    daemon.abort();
    return lost;
  }

  it.each([SPOOL_FILE, STATE_FILE])('reads no %s through a link', async (name) => {
    const lost = await lostJob();
    // The link leads to a copy of the real file with a secret added: followed, it would be sent.
    const path = join(lost.stateDir, name);
    const elsewhere = join(lost.stateDir, `${name}.elsewhere`);
    await writeFile(elsewhere, name === SPOOL_FILE ? 'working\nthe secret\n' : await readFile(path));
    await rename(path, `${path}.moved`);
    await symlink(elsewhere, path);
    await expect(resumeDelivery(lost.stateDir, lost.client, lost.runnerToken, AbortSignal.timeout(30_000), { unfinishedState: 'failed' })).rejects.toThrow(/link|regular file/);
    expect((await lost.ts.server.getTrace(lost.build.id)).toString()).toBe('working\n');
    expect(lost.ts.server.getJob(lost.build.id)?.status).toBe('running');
  });

  it('refuses a record of another job than the one it resumes', async () => {
    const lost = await lostJob();
    const other = lost.build.id + 1;
    await expect(resumeDelivery(lost.stateDir, lost.client, lost.runnerToken, AbortSignal.timeout(30_000), { unfinishedState: 'failed', buildId: other })).rejects.toThrow(`job ${lost.build.id}, not ${other}`);
    expect(lost.ts.server.getJob(lost.build.id)?.status).toBe('running');
  });
});

async function waitForRecord(check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('the delivery record never showed the acknowledged trace');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
