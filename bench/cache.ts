/**
 * The distributed cache through S3 (the Ceph radosgw kit, ../shared/s3: `export $(bash ../shared/s3/up.sh)`
 * first, or S3_ENDPOINT and the kit's other variables set): the time to save a BENCH_CACHE_MB (default
 * 100) MB cache (select, zip, PUT) and to restore it on a runner with an empty cache dir (GET, check,
 * extract), beside a plain upload and download of the same archive bytes with curl and a presigned
 * URL, and `zip -r` / `unzip` of the same files. Data: mixed files, ~40 % of the bytes many small
 * text-like files, the rest a few large random ones. Best of BENCH_CACHE_RUNS (default 2) rounds.
 * Figures are printed, never asserted.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { cacheSchema } from '../src/agent/config/cache-schema.js';
import { archiveCache, cacheTransport, localCacheFile, openCacheStore, restoreCache, type CacheStageOptions } from '../src/cache/index.js';
import { RunnerApiClient } from '../src/client/runner-api.js';
import type { BuildPayload } from '../src/protocol/types.js';

const MiB = 1024 * 1024;

export async function run(): Promise<void> {
  const env = process.env;
  if (!env.S3_ENDPOINT || !env.S3_ACCESS_KEY || !env.S3_SECRET_KEY || !env.S3_BUCKET) {
    process.stdout.write('skipped: no S3 (run `export $(bash ../shared/s3/up.sh)` first)\n');
    return;
  }
  const mb = Number(env.BENCH_CACHE_MB ?? 100);
  const rounds = Number(env.BENCH_CACHE_RUNS ?? 2);
  const endpoint = new URL(env.S3_ENDPOINT);
  const prefix = `bench-${randomBytes(3).toString('hex')}`;
  const config = cacheSchema.parse({
    Type: 's3', Path: prefix, Shared: true,
    s3: { ServerAddress: endpoint.host, Insecure: endpoint.protocol === 'http:', AccessKey: env.S3_ACCESS_KEY, SecretKey: env.S3_SECRET_KEY, BucketName: env.S3_BUCKET, BucketLocation: env.S3_REGION ?? 'us-east-1' },
  });
  const root = await mkdtemp(join(tmpdir(), 'bench-cache-'));
  try {
    const project = join(root, 'project');
    const files = await generate(join(project, 'vendor'), mb);
    const build = fakeBuild();
    const client = new RunnerApiClient({ url: 'http://127.0.0.1:9' });
    const best = { save: Infinity, restore: Infinity, put: Infinity, get: Infinity, zip: Infinity, unzip: Infinity };
    let archiveBytes = 0;
    for (let round = 0; round < rounds; round += 1) {
      const cacheDir = join(root, `cache-${round}`);
      const options = (dir: string): CacheStageOptions => ({ cacheDir: dir, runnerName: 'bench', runnerToken: 'glrt-benchbenchbench', config, spec: { key: `k${round}`, paths: ['vendor/'] }, variable: () => undefined });
      const context = (projectDir: string) => ({ build, client, projectDir, stateDir: root, log: () => undefined, signal: new AbortController().signal });
      let started = performance.now();
      await archiveCache(context(project), options(cacheDir));
      best.save = Math.min(best.save, (performance.now() - started) / 1000);
      const archive = localCacheFile(cacheDir, build, `k${round}`)!;
      archiveBytes = (await stat(archive)).size;

      const restored = join(root, `restored-${round}`);
      started = performance.now();
      const lines: string[] = [];
      await restoreCache({ ...context(restored), log: (line: string) => lines.push(line) }, options(join(root, `other-cache-${round}`)));
      best.restore = Math.min(best.restore, (performance.now() - started) / 1000);
      if (!lines.some((line) => line === 'Successfully extracted cache')) throw new Error(`restore failed: ${lines.join('\n')}`);

      // The same archive bytes, moved by curl with presigned URLs from the same store.
      const store = await openCacheStore(config, { transport: cacheTransport(), signal: new AbortController().signal });
      const object = `${prefix}/plain-${round}`;
      const put = await store.signPut(object, {}, 600, new AbortController().signal);
      started = performance.now();
      await execa('curl', ['-sf', '-T', archive, '-H', 'Content-Type: application/octet-stream', ...Object.entries(put.headers).flatMap(([k, v]) => ['-H', `${k}: ${v}`]), put.url.href]);
      best.put = Math.min(best.put, (performance.now() - started) / 1000);
      const get = await store.signGet(object, 600, new AbortController().signal);
      started = performance.now();
      await execa('curl', ['-sf', '-o', join(root, `plain-${round}.zip`), get.url.href]);
      best.get = Math.min(best.get, (performance.now() - started) / 1000);

      started = performance.now();
      await execa('zip', ['-q', '-r', '--symlinks', join(root, `tool-${round}.zip`), 'vendor'], { cwd: project });
      best.zip = Math.min(best.zip, (performance.now() - started) / 1000);
      const unzipped = join(root, `unzipped-${round}`);
      await mkdir(unzipped);
      started = performance.now();
      await execa('unzip', ['-q', join(root, `tool-${round}.zip`), '-d', unzipped]);
      best.unzip = Math.min(best.unzip, (performance.now() - started) / 1000);
      await rm(restored, { recursive: true, force: true });
      await rm(unzipped, { recursive: true, force: true });
    }
    await client.close();
    const s = (v: number): string => `${v.toFixed(2)} s`;
    process.stdout.write(`${mb} MB in ${files} files, archive ${(archiveBytes / MiB).toFixed(1)} MB; best of ${rounds}\n`);
    process.stdout.write(`ci-runner save (select, zip, PUT)         ${s(best.save)}\n`);
    process.stdout.write(`ci-runner restore (GET, check, extract)   ${s(best.restore)}\n`);
    process.stdout.write(`plain upload of the archive (curl PUT)    ${s(best.put)}\n`);
    process.stdout.write(`plain download of the archive (curl GET)  ${s(best.get)}\n`);
    process.stdout.write(`zip -r of the files / unzip               ${s(best.zip)} / ${s(best.unzip)}\n`);
  } finally {
    await rm(root, { recursive: true, force: true });
    await removeObjects(endpoint, prefix);
  }
}

/** The kit keeps objects in memory: what the bench stored goes again. */
async function removeObjects(endpoint: URL, prefix: string): Promise<void> {
  const { DeleteObjectCommand, ListObjectsV2Command, S3Client } = await import('@aws-sdk/client-s3');
  const env = process.env;
  const s3 = new S3Client({ endpoint: endpoint.origin, region: env.S3_REGION ?? 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: env.S3_ACCESS_KEY ?? '', secretAccessKey: env.S3_SECRET_KEY ?? '' } });
  const listed = await s3.send(new ListObjectsV2Command({ Bucket: env.S3_BUCKET, Prefix: `${prefix}/` }));
  for (const object of listed.Contents ?? []) await s3.send(new DeleteObjectCommand({ Bucket: env.S3_BUCKET, Key: object.Key }));
  s3.destroy();
}

/** ~`totalMiB` of mixed files under `dir`; returns the file count. */
async function generate(dir: string, totalMiB: number): Promise<number> {
  const total = totalMiB * MiB;
  let written = 0;
  let files = 0;
  while (written < total * 0.4) {
    const size = 1024 + Math.floor(Math.random() * 63 * 1024);
    const sub = join(dir, 'src', `d${Math.floor(files / 40)}`);
    await mkdir(sub, { recursive: true });
    await writeFile(join(sub, `f${files}.txt`), randomBytes(Math.ceil((size * 3) / 4)).toString('base64').slice(0, size));
    written += size;
    files += 1;
  }
  await mkdir(join(dir, 'bin'), { recursive: true });
  for (let i = 0; written < total; i += 1) {
    const size = Math.min(16 * MiB, total - written);
    await writeFile(join(dir, 'bin', `blob${i}.bin`), randomBytes(size));
    written += size;
    files += 1;
  }
  return files;
}

function fakeBuild(): BuildPayload {
  return {
    id: 1, ref: 'main', tag: false, sha: '0'.repeat(40), status: 'running', name: 'bench', token: 't', stage: 'test', project_id: 4242, project_name: 'bench',
    commands: 'true', repo_url: 'http://127.0.0.1:1/group/bench.git', before_sha: '0'.repeat(40), allow_git_fetch: false, timeout: 3600, variables: [], options: {}, depends_on_builds: [],
  } as unknown as BuildPayload;
}
