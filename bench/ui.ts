/**
 * The web page's log paths with a 100 MiB trace: what a new viewer receives before it is caught up
 * (its tail, not the whole log), how a connected viewer keeps up while the log grows by 32 MiB, and
 * the whole-log download's speed and the process's memory while serving it.
 */
import { RunnerApiClient } from '../src/client/runner-api.js';
import { createReferenceServer } from '../src/server/index.js';
import { createGitRepo } from '../test/helpers/git.js';
import { openSse } from '../test/ui/sse.js';

const MIB = 1024 * 1024;
const ADMIN = 'bench-ui-admin-token-000000';

function mib(bytes: number): string {
  return `${(bytes / MIB).toFixed(1)} MiB`;
}

async function patchMiB(client: RunnerApiClient, id: number, token: string, from: number, total: number, tag: string): Promise<number> {
  const line = Buffer.from(`${tag} ${'x'.repeat(110)}\n`);
  const chunk = Buffer.concat(Array.from({ length: Math.floor((4 * MIB) / line.byteLength) }, () => line));
  let offset = from;
  while (offset - from < total * MIB) {
    const result = await client.patchTrace(id, token, offset, chunk);
    if (result.status !== 202) throw new Error(`PATCH answered ${result.status}`);
    offset += chunk.byteLength;
  }
  return offset;
}

export async function run(): Promise<void> {
  const repo = await createGitRepo({ 'README.md': '# bench\n' });
  const server = await createReferenceServer({ adminToken: ADMIN, registrationToken: 'bench-reg', projects: [{ name: 'bench/app', path: repo }] });
  const client = new RunnerApiClient({ url: server.url });
  try {
    await server.createPipeline({ project: 'bench/app', config: 'log:\n  script:\n    - echo\n' });
    const runnerToken = (await client.registerRunner({ token: 'bench-reg', description: 'bench', tagList: [], runUntagged: true })).runner!.token;
    const taken = await client.requestBuild(runnerToken, undefined);
    if (taken.kind !== 'build') throw new Error('no build');
    const { id, token } = taken.build;
    let size = await patchMiB(client, id, token, 0, 100, 'old');
    const cookie = `ci_runner_admin=${ADMIN}`;
    const url = `${server.url}/-/ui/api/jobs/${id}/trace/events`;

    let started = performance.now();
    const viewer = await openSse(url, { cookie });
    const events = await viewer.until((event) => event.id === String(size));
    const received = events.filter((e) => e.event === 'append').reduce((sum, e) => sum + Buffer.byteLength(JSON.parse(e.data) as string), 0);
    process.stdout.write(`new viewer of a ${mib(size)} log: ${mib(received)} in ${events.length} events, caught up in ${(performance.now() - started).toFixed(0)} ms\n`);

    started = performance.now();
    const growing = patchMiB(client, id, token, size, 32, 'new');
    let delivered = 0;
    let skips = 0;
    size = await growing;
    for (;;) {
      const event = await viewer.next();
      if (event.event === 'append') delivered += Buffer.byteLength(JSON.parse(event.data) as string);
      if (event.event === 'skip') skips += 1;
      if (event.id === String(size)) break;
    }
    viewer.close();
    process.stdout.write(`connected viewer while the log grew by 32 MiB: ${mib(delivered)} delivered, ${skips} skip(s) ahead, ${(performance.now() - started).toFixed(0)} ms\n`);

    const rssBefore = process.memoryUsage().rss;
    started = performance.now();
    const response = await fetch(`${server.url}/-/ui/api/jobs/${id}/trace`, { headers: { cookie } });
    let bytes = 0;
    let peak = rssBefore;
    for await (const piece of response.body as AsyncIterable<Uint8Array>) {
      bytes += piece.byteLength;
      peak = Math.max(peak, process.memoryUsage().rss);
    }
    const seconds = (performance.now() - started) / 1000;
    process.stdout.write(`whole-log download: ${mib(bytes)} in ${seconds.toFixed(2)} s (${(bytes / MIB / seconds).toFixed(0)} MiB/s), RSS +${mib(peak - rssBefore)} at peak\n`);
  } finally {
    await client.close();
    await server.close();
  }
}
