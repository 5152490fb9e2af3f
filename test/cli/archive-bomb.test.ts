/**
 * The real agent (`run-once`, `run` from dist/) against archives that inflate 1000-fold: memory stays
 * flat, `artifacts_extract_limit` fails the job naming the key, and a full disk fails the job with
 * a clear line, leaves nothing behind, and the daemon takes the next job.
 */
import { copyFile, mkdir, readdir, readFile, rm, statfs, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunnerApiClient } from '../../src/client/runner-api.js';
import { writeTarGzBomb } from '../helpers/bombs.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { mountTmpfs } from '../helpers/tmpfs.js';
import { rawTarGz } from '../artifacts/fixtures.js';
import { NODE_CLI } from './cli.js';
import { waitUntil, workDirs } from './helpers.js';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

let t: TestServer;
let client: RunnerApiClient;
/** Takes the `make` jobs (tagged `maker`), so the agent under test only sees the jobs that depend on them. */
let makerToken: string;
let root: string;
/** 1 GiB of zeros as a ~1 MB tar.gz. */
let bomb: string;

beforeAll(async () => {
  t = await startTestServer();
  client = new RunnerApiClient({ url: t.url });
  makerToken = (await t.registerRunner({ tags: ['maker'] })).token;
  ({ root } = await workDirs());
  bomb = join(root, 'bomb.tar.gz');
  await writeTarGzBomb(bomb, GiB);
}, 120_000);
afterAll(async () => {
  await client.close();
  await t.close();
  await rm(root, { recursive: true, force: true });
});

/** Queues make (uploads `archive` as its artifacts, succeeds) → `use` (the YAML of its body); returns use's id. */
async function afterMake(archive: string, use: string): Promise<number> {
  const pipeline = await t.pipeline(`stages: [build, test]\nmake:\n  stage: build\n  tags: [maker]\n  script: [x]\nuse:\n  stage: test\n${use}`);
  const result = await client.requestBuild(makerToken, undefined);
  if (result.kind !== 'build' || result.build.name !== 'make') throw new Error(`expected the make build, got ${result.kind}`);
  expect((await client.uploadArtifacts(result.build.id, result.build.token, { path: archive, filename: 'artifacts.tar.gz' })).status).toBe(201);
  expect((await client.updateBuild(result.build.id, makerToken, { state: 'success', trace: '' })).outcome).toBe('ok');
  const use_ = pipeline.jobs.find((job) => job.name === 'use');
  if (!use_) throw new Error('no use job');
  return use_.id;
}

const trace = async (id: number): Promise<string> => (await t.server.getTrace(id)).toString('utf8');

/** The largest VmHWM (peak resident set, bytes) seen in /proc while `pid` runs. */
function watchPeakRss(pid: number): { stop(): number } {
  let peak = 0;
  const sample = (): void => {
    readFile(`/proc/${pid}/status`, 'utf8').then(
      (status) => {
        const kib = Number(/^VmHWM:\s+(\d+) kB/m.exec(status)?.[1] ?? 0);
        peak = Math.max(peak, kib * 1024);
      },
      () => undefined,
    );
  };
  const timer = setInterval(sample, 25);
  sample();
  return {
    stop() {
      clearInterval(timer);
      return peak;
    },
  };
}

/**
 * `run-once` for one job with a fresh runner (named "run-once"); `prepare` sees its dirs first.
 * Resolves with its exit code, output, peak RSS and builds dir.
 */
async function runOnce(extra: string[] = [], prepare?: (dirs: { builds: string; cache: string }) => Promise<void>): Promise<{ exitCode: number | undefined; all: string; peak: number; builds: string }> {
  const { token } = await t.registerRunner();
  const d = await workDirs();
  await prepare?.(d);
  const child = execa('node', [...NODE_CLI, 'run-once', '--url', t.url, '--token', token, '--builds-dir', d.builds, '--cache-dir', d.cache, '--wait-timeout', '30s', ...extra], {
    reject: false,
    all: true,
    stdin: 'ignore',
  });
  const watch = watchPeakRss(child.pid ?? 0);
  const result = await child;
  return { exitCode: result.exitCode, all: String(result.all), peak: watch.stop(), builds: d.builds };
}

/** Every file under `dir` whose name matches `pattern`. */
async function filesNamed(dir: string, pattern: RegExp): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true }).catch(() => [] as string[]);
  return entries.filter((entry) => pattern.test(entry.split('/').pop() ?? ''));
}

describe('an archive bomb against the real agent', () => {
  it('keeps the agent within 200 MB of its usual peak while artifacts and a cache inflate to 1 GiB each', async () => {
    const small = join(root, 'small.tar.gz');
    await writeFile(small, rawTarGz([{ name: 'small.txt', type: '0', content: 'small' }]));
    const usual = await afterMake(small, '  script: [test -f small.txt]\n');
    const baseline = await runOnce();
    expect(baseline.exitCode, baseline.all).toBe(0);
    expect(t.server.getJob(usual)?.status).toBe('success');

    const id = await afterMake(bomb, '  cache: { key: bomb, paths: [nothing/] }\n  script: [test -s bomb.bin]\n');
    // The cache run-once will restore, <cache_dir>/<project>/<key>/cache.zip, is the same bomb (a
    // cache is read by its content, whatever made it).
    const result = await runOnce([], async (d) => {
      await mkdir(join(d.cache, 'group', 'project', 'bomb'), { recursive: true });
      await copyFile(bomb, join(d.cache, 'group', 'project', 'bomb', 'cache.zip'));
    });
    try {
      expect(result.exitCode, result.all).toBe(0);
      const text = await trace(id);
      expect(text).toContain('Extracted 1 entries (1024.0 MB, tar.gz) from the artifacts of make');
      expect(text).toContain('Restored cache "bomb": 1 entries, 1024.0 MB');
      const growth = result.peak - baseline.peak;
      console.log(`run-once peak RSS: ${(baseline.peak / MiB).toFixed(0)} MB with a small artifact, ${(result.peak / MiB).toFixed(0)} MB with artifacts and a cache of 1 GiB inflated each (growth ${(growth / MiB).toFixed(0)} MB)`);
      expect(baseline.peak).toBeGreaterThan(0);
      expect(growth).toBeLessThan(200 * MiB);
    } finally {
      await rm(result.builds, { recursive: true, force: true });
    }
  }, 180_000);

  it('fails the job with a line naming artifacts_extract_limit when the artifacts exceed it, writing none of them', async () => {
    const id = await afterMake(bomb, '  script: [echo never]\n');
    const result = await runOnce(['--artifacts-extract-limit', '100MB']);
    expect(result.exitCode, result.all).toBe(1);
    expect(t.server.getJob(id)?.status).toBe('failed');
    expect(await trace(id)).toMatch(
      /ERROR: Job failed: downloading artifacts failed: artifacts of make \(\d+\): the archive holds at least 1024\.0 MB of files, more than the 100\.0 MB left of the job's artifacts_extract_limit \(100\.0 MB\); nothing of it was extracted\. Raise artifacts_extract_limit/,
    );
    expect(await trace(id)).not.toContain('never');
    expect(await filesNamed(result.builds, /^(bomb\.bin|artifacts-download-.*)$/)).toEqual([]);
  }, 120_000);

  it('refuses a bad --artifacts-extract-limit with a usage error', async () => {
    const d = await workDirs();
    const result = await execa('node', [...NODE_CLI, 'run-once', '--url', t.url, '--token', 'x', '--builds-dir', d.builds, '--artifacts-extract-limit', '1024'], { reject: false, all: true, stdin: 'ignore' });
    expect(result.exitCode).toBe(2);
    expect(result.all).toMatch(/--artifacts-extract-limit: expected a size with a unit, such as "500MB"/);
  });
});

describe('a full disk under the daemon', () => {
  it('fails the job with a clear line, leaves nothing on the disk, and the daemon runs the next job', async (ctx) => {
    const disk = await mountTmpfs(8);
    if ('skip' in disk) {
      console.log(`skipped "${ctx.task.name}": ${disk.skip}`);
      ctx.skip();
      return;
    }
    const { token } = await t.registerRunner();
    const config = join(root, 'full-disk.toml');
    await writeFile(
      config,
      `concurrent = 1\ncheck_interval = 1\nlog_format = "json"\n\n[[runners]]\n  name = "full"\n  url = "${t.url}"\n  token = "${token}"\n  builds_dir = "${join(disk.dir, 'builds')}"\n  cache_dir = "${join(root, 'cache')}"\n`,
    );
    const id = await afterMake(bomb, '  script: [echo never]\n');
    const daemon = execa('node', [...NODE_CLI, 'run', '-c', config], { reject: false, all: true, stdin: 'ignore' });
    let output = '';
    daemon.all?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    try {
      const job = await t.waitForJob(id, (view) => view.status === 'failed' || view.status === 'success', 60_000);
      expect(job.status, output).toBe('failed');
      expect(await trace(id)).toMatch(
        /ERROR: Job failed: downloading artifacts failed: artifacts of make \(\d+\): no space left on the device \(ENOSPC\) while extracting into \S+; removed what it had written/,
      );
      const next = (await t.pipeline('after:\n  script: [echo "the runner is still here"]\n')).jobs[0]!.id;
      await t.waitForJob(next, (view) => view.status === 'success', 60_000);
      expect(await trace(next)).toContain('the runner is still here');
      expect(daemon.exitCode, output).toBeNull();
      await waitUntil(async () => (await filesNamed(disk.dir, /^(bomb\.bin|artifacts-download-.*|trace\.log)$/)).length === 0, 10_000, 'job files removed');
      const stats = await statfs(disk.dir);
      // What is left is the two checkouts of the test project: a few hundred KB.
      expect((stats.blocks - stats.bfree) * stats.bsize).toBeLessThan(2 * MiB);
      expect(output).not.toMatch(/unhandled|BUG:/i);
    } finally {
      daemon.kill('SIGTERM');
      await daemon;
      await disk.unmount();
    }
    expect((await daemon).exitCode, output).toBe(0);
  }, 120_000);
});
