/**
 * Bringing the build's files back from the pod. The command prints its archive and a trailer with
 * tar's status, then waits: the runner closes the connection once the trailer is in, and never needs
 * the exec's status frame (which a cluster can lose with a long stream's last bytes). A connection that
 * ends before the trailer is asked again, with a line in the trace; the runner's project dir is
 * replaced only by a complete archive. A local WebSocket server speaks the exec channel protocol in
 * place of the apiserver: the real one drops a stream only under load.
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
import { TarEndFinder, TarOverLimitError, TRAILER_END, TRAILER_START } from '../../../src/executors/kubernetes/tar-end.js';
import { COLLECT_ATTEMPTS, CollectOverLimitError, collectProject } from '../../../src/executors/kubernetes/transfer.js';
import { createPki, type Pki } from '../../helpers/pki.js';

/**
 * What one exec connection does, as the pod's command would: the whole archive and its trailer (then
 * wait for the runner to close), part of the archive and a drop, a trailer saying tar failed, or a
 * shell that fails before tar (a status frame, no trailer), or output that is no tar at all (then wait).
 */
type Answer = 'whole' | 'drop' | 'tar-fails' | 'no-dir' | 'garbage';

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

/** The pod's project dir as a tar: a 3 MB file and small ones in a subdir. */
async function podTar(): Promise<{ tar: Buffer; big: Buffer }> {
  const pod = join(dir, 'pod');
  const big = randomBytes(3 * 1024 * 1024);
  await mkdir(join(pod, 'sub'), { recursive: true });
  await writeFile(join(pod, 'out.bin'), big);
  await writeFile(join(pod, 'sub', 'x.txt'), 'made in the pod\n');
  // A file that looks like the end of the stream must not be taken for it.
  await writeFile(join(pod, 'sub', 'trap.txt'), Buffer.concat([Buffer.alloc(1024), Buffer.from(`${TRAILER_START}0\n${TRAILER_END}`)]));
  await create({ cwd: pod, file: join(dir, 'pod.tar'), portable: true }, ['out.bin', 'sub']);
  return { tar: await readFile(join(dir, 'pod.tar')), big };
}

/** An exec endpoint answering its connections with `answers` in turn; returns the commands it was given. */
async function execEndpoint(tar: Buffer, answers: Answer[]): Promise<{ host: string; commands: string[]; stdin: string[]; closedByRunner: number }> {
  const commands: string[] = [];
  const stdin: string[] = [];
  const seen = { closedByRunner: 0 };
  server = createServer({ cert: await readFile(pki.serverCert), key: await readFile(pki.serverKey) });
  const sockets = new WebSocketServer({ server, handleProtocols: (protocols) => (protocols.has('v4.channel.k8s.io') ? 'v4.channel.k8s.io' : false) });
  sockets.on('connection', (ws: WebSocket, request) => {
    const query = new URL(request.url ?? '', 'http://x').searchParams;
    commands.push(query.getAll('command').join(' '));
    stdin.push(query.get('stdin') ?? '');
    const answer = answers[Math.min(commands.length - 1, answers.length - 1)];
    const frame = (channel: number, data: Buffer | string): Buffer => Buffer.concat([Buffer.from([channel]), Buffer.from(data)]);
    const trailer = (code: number, errors: string): Buffer => frame(1, `${TRAILER_START}${code}\n${errors}${TRAILER_END}`);
    if (answer === 'no-dir') {
      ws.send(frame(2, 'sh: cd: line 1: can\'t cd to /builds/group/project: No such file or directory\n'));
      ws.send(frame(3, JSON.stringify({ status: 'Failure', reason: 'NonZeroExitCode', details: { causes: [{ reason: 'ExitCode', message: '1' }] } })));
      ws.close();
      return;
    }
    if (answer === 'garbage') {
      ws.send(frame(1, Buffer.alloc(512, 'not a tar header ')));
      ws.once('close', () => (seen.closedByRunner += 1));
      return;
    }
    const until = answer === 'drop' ? Math.floor(tar.length / 2) : tar.length;
    for (let at = 0; at < until; at += 256 * 1024) ws.send(frame(1, tar.subarray(at, Math.min(until, at + 256 * 1024))));
    if (answer === 'drop') {
      // As a proxy on the way does when its backend resets: no status, no close frame.
      setTimeout(() => ws.terminate(), 50);
      return;
    }
    // Padding after the archive's end, as tar writes it, then the trailer in two pieces.
    ws.send(frame(1, Buffer.alloc(3000)));
    const last = answer === 'tar-fails' ? trailer(2, 'tar: sub/secret: Permission denied\ntar: error exit delayed from previous errors') : trailer(0, '');
    ws.send(last.subarray(0, 10));
    ws.send(Buffer.concat([Buffer.from([1]), last.subarray(10)]));
    // The command now waits on its standard input: the runner must close the connection.
    ws.once('close', () => (seen.closedByRunner += 1));
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return {
    host: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
    commands,
    stdin,
    get closedByRunner() {
      return seen.closedByRunner;
    },
  };
}

/** The runner's project dir before the copy-back: its `.git` and a file the build deleted in the pod. */
async function runnerProject(): Promise<string> {
  const project = join(dir, 'project');
  await mkdir(join(project, '.git'), { recursive: true });
  await writeFile(join(project, '.git', 'HEAD'), 'ref: refs/heads/main\n');
  await writeFile(join(project, 'deleted-in-pod.txt'), 'old\n');
  return project;
}

async function collect(host: string, projectDir: string, warnings: string[], limitBytes = 1024 ** 3): Promise<{ entries: number; bytes: number }> {
  return collectProject({
    limit: { bytes: limitBytes, setting: 'artifacts_extract_limit' },
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
  it('takes the archive by its trailer and closes the connection itself: no status frame is needed', async () => {
    const { tar, big } = await podTar();
    const endpoint = await execEndpoint(tar, ['whole']);
    const project = await runnerProject();
    const warnings: string[] = [];
    const summary = await collect(endpoint.host, project, warnings);
    expect(endpoint.commands).toHaveLength(1);
    // Standard input is attached (the command waits on it), and the runner hung up.
    expect(endpoint.stdin).toEqual(['true']);
    await expect.poll(() => endpoint.closedByRunner).toBe(1);
    expect(warnings).toEqual([]);
    expect((await readFile(join(project, 'out.bin'))).equals(big)).toBe(true);
    expect((await readdir(project)).sort()).toEqual(['.git', 'out.bin', 'sub']);
    expect(summary.entries).toBe(4);
    expect((await readFile(join(project, 'sub', 'trap.txt'))).subarray(1024).toString()).toBe(`${TRAILER_START}0\n${TRAILER_END}`);
  });

  it('asks again when the connection drops before the trailer, and extracts only the complete archive', async () => {
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

  it('stops at its limit: an entry announcing more than is left fails the copy-back before its data is kept, and nothing of it stays', async () => {
    const { tar } = await podTar();
    const endpoint = await execEndpoint(tar, ['whole']);
    const project = await runnerProject();
    const error = await collect(endpoint.host, project, [], 1024 * 1024).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CollectOverLimitError);
    expect((error as CollectOverLimitError).code).toBe('COLLECT_OVER_LIMIT');
    expect((error as Error).message).toContain("the build's files in the pod come to more than 1.00 MB (artifacts_extract_limit); the copy-back stopped there");
    expect(endpoint.commands).toHaveLength(1);
    await expect.poll(() => endpoint.closedByRunner).toBe(1);
    expect((await readdir(project)).sort()).toEqual(['.git', 'deleted-in-pod.txt']);
    expect((await readdir(dir)).filter((name) => name.startsWith('collect-'))).toEqual([]);
  });

  it('never lets more than its limit through, whatever size a header claims (a sparse file of 100 GB)', async () => {
    const header = Buffer.alloc(512);
    header.write('huge.bin', 0);
    header.write('00000000644\0', 100);
    // 100 GiB, in GNU's base-256 form.
    header[124] = 0x80;
    header.writeUIntBE(100 * 1024 ** 3, 136 - 6, 6);
    let passed = 0;
    const finder = new TarEndFinder(64 * 1024);
    finder.on('data', (chunk: Buffer) => (passed += chunk.length));
    const errors: Error[] = [];
    finder.on('error', (error) => errors.push(error));
    finder.write(Buffer.concat([header, Buffer.alloc(8192)]));
    await new Promise((resolve) => setImmediate(resolve));
    expect(errors[0]).toBeInstanceOf(TarOverLimitError);
    expect(passed).toBe(0);
  });

  it('does not ask again when tar itself fails: its trailer says so, and why', async () => {
    const { tar } = await podTar();
    const { host, commands } = await execEndpoint(tar, ['tar-fails', 'whole']);
    const project = await runnerProject();
    const warnings: string[] = [];
    await expect(collect(host, project, warnings)).rejects.toThrow('tar in the build container exited with status 2: tar: sub/secret: Permission denied; tar: error exit delayed from previous errors');
    expect(commands).toHaveLength(1);
    expect(warnings).toEqual([]);
    expect((await readdir(project)).sort()).toEqual(['.git', 'deleted-in-pod.txt']);
  });

  it('says why when the command fails before tar (its status came, no trailer)', async () => {
    const { tar } = await podTar();
    const { host, commands } = await execEndpoint(tar, ['no-dir', 'whole']);
    const project = await runnerProject();
    await expect(collect(host, project, [])).rejects.toThrow("tar in the build container exited with status 1: sh: cd: line 1: can't cd to /builds/group/project: No such file or directory");
    expect(commands).toHaveLength(1);
    expect((await readdir(project)).sort()).toEqual(['.git', 'deleted-in-pod.txt']);
  });

  it('hangs up and says so when the output is not a tar stream, instead of waiting for a trailer', async () => {
    const { tar } = await podTar();
    const endpoint = await execEndpoint(tar, ['garbage']);
    const project = await runnerProject();
    await expect(collect(endpoint.host, project, [])).rejects.toThrow(/^the copy-back's output is not a tar archive/);
    await expect.poll(() => endpoint.closedByRunner).toBe(1);
    expect(endpoint.commands).toHaveLength(1);
    expect((await readdir(project)).sort()).toEqual(['.git', 'deleted-in-pod.txt']);
  });
});
