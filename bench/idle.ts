/**
 * Idle benchmark: RSS and CPU of an idle `ci-runner run` (one runner entry, `listen_address` set,
 * /metrics scraped) after start-up, after a job, after a SIGHUP reload and after an edit of
 * config.toml, then its highest RSS while a job prints 100 MB. Next to it, in the same run: a bare
 * `node -e`, and the floor (floor.mjs: a node that has loaded and used once the libraries the daemon
 * stands on). The memory goal, printed beside the figures: idle after a job and the reloads at most
 * the floor + 15 MB, and while printing at most that idle + 40 MB. `npm run bench -- idle` runs only
 * this; `npm run bench -- agent` prints it after the per-job figures. Printed, not asserted.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readTlsMaterial } from '../src/client/tls.js';
import { silentLogger } from '../src/log/index.js';
import { DAEMON_NODE_FLAGS } from '../src/util/node-flags.js';
import { createReferenceServer, type ReferenceServer } from '../src/server/index.js';
import { createGitRepo } from '../test/helpers/git.js';
import { createPki } from '../test/helpers/pki.js';
import { register } from './support.js';

const CLI = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function cpuTicks(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

async function rssMb(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
}

/** A free port on 127.0.0.1 (for the idle daemon's status server). */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

export interface IdleFigure {
  rss: number;
  cpuPct: number;
  seconds: number;
}

/**
 * Watches `pid` for `seconds`: the highest RSS seen and the CPU used, calling `tick` once a second
 * (a scrape of /metrics, as Prometheus would).
 */
async function observe(pid: number, seconds: number, tick: () => Promise<void>): Promise<IdleFigure> {
  const before = await cpuTicks(pid);
  const t0 = performance.now();
  let rss = 0;
  for (let i = 0; i < seconds; i += 1) {
    await sleep(1000);
    await tick();
    rss = Math.max(rss, await rssMb(pid));
  }
  const elapsed = (performance.now() - t0) / 1000;
  return { rss, cpuPct: (((await cpuTicks(pid)) - before) / 100 / elapsed) * 100, seconds: elapsed };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

/** The same figures for a bare `node -e` that only keeps its event loop alive. */
export async function bareNode(seconds = 10): Promise<IdleFigure> {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 3000)'], { stdio: 'ignore' });
  try {
    await sleep(5000);
    return await observe(child.pid ?? 0, seconds, async () => undefined);
  } finally {
    await stop(child);
  }
}

const FLOOR = fileURLToPath(new URL('./floor.mjs', import.meta.url));

/** The floor (floor.mjs), started with the daemon's V8 flags, settled for `settle` seconds. */
export async function floorNode(root: string, options: { settle?: number; seconds?: number } = {}): Promise<IdleFigure> {
  const dir = join(root, 'floor');
  await mkdir(dir, { recursive: true });
  const child = spawn(process.execPath, [...DAEMON_NODE_FLAGS, FLOOR, dir], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    await new Promise<void>((resolve, reject) => {
      let out = '';
      child.stdout?.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('ready')) resolve();
      });
      child.once('exit', (code) => reject(new Error(`floor.mjs exited with ${code} before it was ready`)));
    });
    await sleep((options.settle ?? 15) * 1000);
    return await observe(child.pid ?? 0, options.seconds ?? 10, async () => undefined);
  } finally {
    await stop(child);
  }
}

export interface IdleRun {
  /** Settled after start-up, never a job. */
  fresh: IdleFigure;
  /** Settled after one job (shell executor, git clone, a one-line script). */
  afterJob: IdleFigure;
  /** Settled after a SIGHUP reload. */
  afterHup: IdleFigure;
  /** Settled after config.toml was edited on disk (the file watch reloads it). */
  afterEdit: IdleFigure;
  /** The highest RSS (MB) while a job printed 100 MB, sampled every 200 ms. */
  printing: number;
}

/**
 * A job that prints 100 MiB: 1 Mi lines of 99 characters and a newline (the trace keeps `output_limit`
 * of it; the runner reads the rest and drops it). No `yes | head`: the job's shell has pipefail.
 */
const PRINTING_JOB = 'print:\n  script:\n    - head -c 103809024 /dev/zero | tr -c x x | fold -w 99\n';

/** The highest RSS of `pid` until `done` settles, sampled every `everyMs`. */
async function peakRss(pid: number, done: Promise<unknown>, everyMs = 200): Promise<number> {
  let finished = false;
  void done.finally(() => (finished = true));
  let peak = 0;
  while (!finished) {
    peak = Math.max(peak, await rssMb(pid));
    await sleep(everyMs);
  }
  return peak;
}

async function waitForPipeline(server: ReferenceServer, id: number): Promise<string> {
  for (;;) {
    const view = server.getPipeline(id);
    if (view && ['success', 'failed', 'canceled'].includes(view.status)) return view.status;
    await sleep(100);
  }
}

/**
 * `ci-runner run` with one entry and `listen_address`: idle figures after start-up, after a job,
 * after SIGHUP and after an edit. `settle` seconds pass before each window of `seconds`.
 */
export async function idleDaemon(server: ReferenceServer, root: string, options: { settle?: number; seconds?: number; nodeFlags?: readonly string[]; caFile?: string } = {}): Promise<IdleRun> {
  const nodeFlags = options.nodeFlags ?? DAEMON_NODE_FLAGS;
  const settle = (options.settle ?? 15) * 1000;
  const seconds = options.seconds ?? 10;
  const token = await register(server, options.caFile ? readTlsMaterial({ 'tls-ca-file': options.caFile }) : undefined);
  const tlsLine = options.caFile ? `  tls-ca-file = "${options.caFile}"\n` : '';
  const config = join(root, 'idle.toml');
  const port = await freePort();
  const scrape = async (): Promise<void> => {
    await fetch(`http://127.0.0.1:${port}/metrics`).then((r) => r.text()).catch(() => undefined);
  };
  await writeFile(
    config,
    `concurrent = 1\ncheck_interval = 3\nlog_level = "warn"\nlisten_address = "127.0.0.1:${port}"\n` +
      `[[runners]]\n  name = "idle"\n  url = "${server.url}"\n  token = "${token}"\n${tlsLine}  builds_dir = "${join(root, 'idle-builds')}"\n  cache_dir = "${join(root, 'idle-cache')}"\n`,
    // Owner-only, as `register` writes it: the daemon warns about a config others can read.
    { mode: 0o600 },
  );
  // Started as the bin and the systemd unit start it: with the daemon's V8 flags.
  const child = spawn(process.execPath, [...nodeFlags, CLI, 'run', '-c', config], { stdio: ['ignore', 'ignore', 'inherit'] });
  const pid = child.pid ?? 0;
  try {
    // Past start-up: module compilation, JIT and the first GCs cost ~0.1 s of CPU in the first
    // ~15 s (the first polls run cold code); the steady state is what an idle daemon costs.
    await sleep(settle);
    await scrape();
    const fresh = await observe(pid, seconds, scrape);
    const pipeline = await server.createPipeline({ project: 'bench/project', config: 'job:\n  script:\n    - echo hello\n' });
    const status = await waitForPipeline(server, pipeline.id);
    if (status !== 'success') process.stdout.write(`  (the job ended ${status})\n`);
    await sleep(settle);
    const afterJob = await observe(pid, seconds, scrape);
    child.kill('SIGHUP');
    await sleep(settle);
    const afterHup = await observe(pid, seconds, scrape);
    await appendFile(config, '# edited\n');
    await sleep(settle);
    const afterEdit = await observe(pid, seconds, scrape);
    const printingPipeline = await server.createPipeline({ project: 'bench/project', config: PRINTING_JOB });
    const printed = waitForPipeline(server, printingPipeline.id);
    const printing = await peakRss(pid, printed);
    if ((await printed) !== 'success') process.stdout.write(`  (the printing job ended ${await printed})\n`);
    return { fresh, afterJob, afterHup, afterEdit, printing };
  } finally {
    await stop(child);
  }
}

const mb = (f: IdleFigure): string => `RSS ${f.rss.toFixed(1)} MB, CPU ${f.cpuPct.toFixed(2)} %`;
const verdict = (value: number, limit: number): string => (value <= limit ? 'met' : `MISSED by ${(value - limit).toFixed(1)} MB`);

/** Goals of the idle daemon, in MB above the floor and above its own idle figure. */
const IDLE_OVER_FLOOR_MB = 15;
const PRINTING_OVER_IDLE_MB = 40;

/** The floor (and a bare node) in this run: what printIdle's goals are measured against. */
export async function printFloor(root: string): Promise<IdleFigure> {
  const bare = await bareNode();
  process.stdout.write(`bare \`node -e\` (same machine, same run): ${mb(bare)}\n`);
  const floor = await floorNode(root);
  process.stdout.write(`floor (bench/floor.mjs: node with the daemon's flags that has loaded and used undici, pino, zod, execa, yargs, chokidar and tar): ${mb(floor)}\n`);
  return floor;
}

/** Prints the idle figures and the goals; `server` must know the project `bench/project`. */
export async function printIdle(server: ReferenceServer, root: string, options: { caFile?: string; floor?: IdleFigure } = {}): Promise<void> {
  const floor = options.floor ?? (await printFloor(root));
  const daemon = await idleDaemon(server, root, options.caFile ? { caFile: options.caFile } : {});
  const over = `over ${daemon.fresh.seconds.toFixed(0)} s`;
  const coordinator = options.caFile ? 'an https coordinator with a private CA' : 'an http coordinator';
  process.stdout.write(`idle \`run\` (1 runner on ${coordinator}, check_interval 3 s, listen_address, /metrics scraped every second) ${over}: ${mb(daemon.fresh)}\n`);
  process.stdout.write(`  after one job: ${mb(daemon.afterJob)}\n`);
  process.stdout.write(`  after a SIGHUP reload: ${mb(daemon.afterHup)}\n`);
  process.stdout.write(`  after config.toml was edited: ${mb(daemon.afterEdit)}\n`);
  process.stdout.write(`  while a job printed 100 MB: RSS ${daemon.printing.toFixed(1)} MB at most\n`);
  const idle = Math.max(daemon.afterJob.rss, daemon.afterHup.rss, daemon.afterEdit.rss);
  const idleLimit = floor.rss + IDLE_OVER_FLOOR_MB;
  const printingLimit = idle + PRINTING_OVER_IDLE_MB;
  process.stdout.write(`  goal: idle after a job and reloads ${idle.toFixed(1)} MB ≤ floor + ${IDLE_OVER_FLOOR_MB} = ${idleLimit.toFixed(1)} MB: ${verdict(idle, idleLimit)}\n`);
  process.stdout.write(`  goal: while printing ${daemon.printing.toFixed(1)} MB ≤ idle + ${PRINTING_OVER_IDLE_MB} = ${printingLimit.toFixed(1)} MB: ${verdict(daemon.printing, printingLimit)}\n`);
}

/** The same over https: TLS is loaded and used by every poll (`npm run bench -- idle` only). */
async function printIdleHttps(root: string, repo: string, floor: IdleFigure): Promise<void> {
  const pki = await createPki();
  const tls = { cert: await pki.read(pki.serverCert), key: await pki.read(pki.serverKey) };
  const server = await createReferenceServer({ projects: [{ name: 'bench/project', path: repo }], logger: silentLogger(), tls });
  try {
    await printIdle(server, root, { caFile: pki.caCert, floor });
  } finally {
    await server.close();
    await rm(pki.dir, { recursive: true, force: true });
  }
}

export async function run(): Promise<void> {
  const root = await mkdtemp(join(tmpdir(), 'ci-runner-bench-idle-'));
  const repo = await createGitRepo({ 'README.md': '# bench\n' });
  const server = await createReferenceServer({ projects: [{ name: 'bench/project', path: repo }], logger: silentLogger() });
  try {
    const floor = await printFloor(root);
    await printIdle(server, root, { floor });
    await printIdleHttps(root, repo, floor);
  } finally {
    await server.close();
    await rm(root, { recursive: true, force: true });
    await rm(repo, { recursive: true, force: true });
  }
}
