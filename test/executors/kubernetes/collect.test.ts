/**
 * Bringing the build's files back from the pod when the exec connection ends before tar's status (the
 * cluster dropped a long stream at its end): the archive is asked for again, a line in the trace says
 * so, and the runner's project dir is replaced only by a complete archive. A local WebSocket server
 * speaks the exec channel protocol in place of the apiserver: the real one drops a stream only in a race.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { create } from 'tar';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { WebSocketServer, type WebSocket } from 'ws';
import { connect } from '../../../src/executors/kubernetes/connection.js';
import { PodExecError } from '../../../src/executors/kubernetes/exec.js';
import { COLLECT_ATTEMPTS, collectProject } from '../../../src/executors/kubernetes/transfer.js';
import { createPki, type Pki } from '../../helpers/pki.js';

/** What one exec connection does: send the whole tar and a status, or part of it and drop. */
type Answer = 'whole' | 'drop' | 'tar-fails';

let pki: Pki;
let dir: string;
let server: Server | undefined;
beforeAll(async () => {
  pki = await createPki();
});
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ci-collect-'));
});
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
  await rm(dir, { recursive: true, force: true });
});

/** The pod's project dir as a tar: a 3 MB file and a small one in a subdir. */
async function podTar(): Promise<{ tar: Buffer; big: Buffer }> {
  const pod = join(dir, 'pod');
  const big = randomBytes(3 * 1024 * 1024);
  await mkdir(join(pod, 'sub'), { recursive: true });
  await writeFile(join(pod, 'out.bin'), big);
  await writeFile(join(pod, 'sub', 'x.txt'), 'made in the pod\n');
  await create({ cwd: pod, file: join(dir, 'pod.tar'), portable: true }, ['out.bin', 'sub']);
  return { tar: await readFile(join(dir, 'pod.tar')), big };
}

/** An exec endpoint answering its connections with `answers` in turn; returns the commands it was given. */
async function execEndpoint(tar: Buffer, answers: Answer[]): Promise<{ host: string; commands: string[] }> {
  const commands: string[] = [];
  server = createServer({ cert: await readFile(pki.serverCert), key: await readFile(pki.serverKey) });
  const sockets = new WebSocketServer({ server, handleProtocols: (protocols) => (protocols.has('v4.channel.k8s.io') ? 'v4.channel.k8s.io' : false) });
  sockets.on('connection', (ws: WebSocket, request) => {
    commands.push(new URL(request.url ?? '', 'http://x').searchParams.getAll('command').join(' '));
    const answer = answers[Math.min(commands.length - 1, answers.length - 1)];
    const frame = (channel: number, data: Buffer | string): Buffer => Buffer.concat([Buffer.from([channel]), Buffer.from(data)]);
    if (answer === 'tar-fails') {
      ws.send(frame(2, 'tar: sub: Permission denied\n'));
      ws.send(frame(3, JSON.stringify({ status: 'Failure', reason: 'NonZeroExitCode', details: { causes: [{ reason: 'ExitCode', message: '2' }] } })));
      ws.close();
      return;
    }
    const until = answer === 'whole' ? tar.length : Math.floor(tar.length / 2);
    for (let at = 0; at < until; at += 256 * 1024) ws.send(frame(1, tar.subarray(at, Math.min(until, at + 256 * 1024))));
    if (answer === 'drop') {
      // As a proxy on the way does when its backend resets: no status, no close frame.
      setTimeout(() => ws.terminate(), 50);
      return;
    }
    ws.send(frame(3, JSON.stringify({ status: 'Success' })));
    ws.close();
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return { host: `https://127.0.0.1:${(server.address() as AddressInfo).port}`, commands };
}

/** The runner's project dir before the copy-back: its `.git` and a file the build deleted in the pod. */
async function runnerProject(): Promise<string> {
  const project = join(dir, 'project');
  await mkdir(join(project, '.git'), { recursive: true });
  await writeFile(join(project, '.git', 'HEAD'), 'ref: refs/heads/main\n');
  await writeFile(join(project, 'deleted-in-pod.txt'), 'old\n');
  return project;
}

async function collect(host: string, projectDir: string, warnings: string[]): Promise<{ entries: number; bytes: number }> {
  return collectProject({
    connection: connect({ host, bearer_token: 't', ca_file: pki.caCert }),
    target: { namespace: 'ns', pod: 'job-pod', container: 'build' },
    podProjectDir: '/builds/group/project',
    projectDir,
    scratchDir: dir,
    signal: AbortSignal.timeout(20_000),
    warn: (line) => warnings.push(line),
  });
}

describe('kubernetes executor: bringing the build\'s files back', () => {
  it('asks again when the connection drops before the status, and extracts only the complete archive', async () => {
    const { tar, big } = await podTar();
    const { host, commands } = await execEndpoint(tar, ['drop', 'whole']);
    const project = await runnerProject();
    const warnings: string[] = [];
    const summary = await collect(host, project, warnings);
    expect(commands).toHaveLength(2);
    expect(commands[0]).toContain('/builds/group/project');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/^WARNING: the exec connection to pod job-pod closed \(WebSocket code 1006, after \d+ bytes of output\) before the command's exit status came; asking for the build's files again \(2 of 3\)$/);
    expect((await readFile(join(project, 'out.bin'))).equals(big)).toBe(true);
    expect(await readFile(join(project, 'sub', 'x.txt'), 'utf8')).toBe('made in the pod\n');
    expect((await readdir(project)).sort()).toEqual(['.git', 'out.bin', 'sub']);
    expect(await readFile(join(project, '.git', 'HEAD'), 'utf8')).toBe('ref: refs/heads/main\n');
    expect(summary.bytes).toBeGreaterThanOrEqual(big.length);
    // The archive is kept in the scratch dir only while it is used.
    expect((await readdir(dir)).filter((name) => name.startsWith('collect-'))).toEqual([]);
  });

  it(`gives up after ${COLLECT_ATTEMPTS} dropped connections and leaves the runner's project dir as it was`, async () => {
    const { tar } = await podTar();
    const { host, commands } = await execEndpoint(tar, ['drop']);
    const project = await runnerProject();
    const warnings: string[] = [];
    const error = await collect(host, project, warnings).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PodExecError);
    expect((error as PodExecError).statusLost).toBe(true);
    expect(commands).toHaveLength(COLLECT_ATTEMPTS);
    expect(warnings.map((line) => /\((\d) of 3\)$/.exec(line)?.[1])).toEqual(['2', '3']);
    expect((await readdir(project)).sort()).toEqual(['.git', 'deleted-in-pod.txt']);
  });

  it('does not ask again when tar itself fails: its status came, and says why', async () => {
    const { tar } = await podTar();
    const { host, commands } = await execEndpoint(tar, ['tar-fails', 'whole']);
    const project = await runnerProject();
    const warnings: string[] = [];
    await expect(collect(host, project, warnings)).rejects.toThrow('tar in the build container exited with status 2: tar: sub: Permission denied');
    expect(commands).toHaveLength(1);
    expect(warnings).toEqual([]);
    expect((await readdir(project)).sort()).toEqual(['.git', 'deleted-in-pod.txt']);
  });
});
