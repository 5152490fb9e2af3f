import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { cacheSchema } from '../../src/agent/config/cache-schema.js';
import { archiveCache, cacheTransport, openCacheStore, restoreCache, uploadCacheFile, type CacheConfig } from '../../src/cache/index.js';
import type { CacheOptions } from '../../src/protocol/types.js';
import { fakeBuild, removeTempDirs, tempDir, testContext, writeFiles } from '../artifacts/fixtures.js';
import { AZURITE_ACCOUNT, AZURITE_DOMAIN, AZURITE_KEY, startAzurite, type Azurite } from '../helpers/azurite.js';
import { createPki, type Pki } from '../helpers/pki.js';
import { cacheOptions } from './fixtures.js';

let pki: Pki;
let azurite: Azurite;
let ca: string;
const container = `cache-${randomBytes(4).toString('hex')}`;
const saved = { HTTPS_PROXY: process.env.HTTPS_PROXY, NO_PROXY: process.env.NO_PROXY };

beforeAll(async () => {
  pki = await createPki();
  ca = await pki.read(pki.caCert);
  azurite = await startAzurite(pki);
  await azurite.createContainer(container);
  // Azure's host names reach Azurite only through the proxy (tests in this worker run one at a time).
  process.env.HTTPS_PROXY = azurite.proxy.url;
  delete process.env.NO_PROXY;
}, 120_000);

afterAll(async () => {
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  await azurite?.stop();
});

afterEach(removeTempDirs);

const spec: CacheOptions = { key: 'deps', paths: ['vendor/'] };
let projects = 200;
const text = (ctx: { lines: string[] }): string => ctx.lines.join('\n');

async function job(files: Record<string, string> = {}, projectId?: number): Promise<ReturnType<typeof testContext>> {
  const projectDir = await tempDir();
  await writeFiles(projectDir, files);
  return testContext({ build: fakeBuild({ project_id: projectId ?? (projects += 1), options: { cache: spec } }), projectDir, stateDir: await tempDir() });
}

function config(azure: Record<string, unknown> = {}): CacheConfig {
  return cacheSchema.parse({ Type: 'azure', azure: { AccountName: AZURITE_ACCOUNT, AccountKey: AZURITE_KEY, ContainerName: container, StorageDomain: AZURITE_DOMAIN, ...azure } });
}

describe('the distributed cache in Azure Blob Storage (Azurite, over https through a proxy, private CA)', () => {
  it('shares a cache between two runners with different cache dirs, as a blob named as GitLab Runner names it', async () => {
    const writer = await job({ 'vendor/lib/a.js': 'from runner A' });
    await archiveCache(writer, cacheOptions(await tempDir(), writer.build, { config: config(), ca }));
    const blob = `runner/abcdefghi/project/${writer.build.project_id}/deps`;
    expect(text(writer)).toContain(`Uploading cache.zip to https://${AZURITE_ACCOUNT}.${AZURITE_DOMAIN}/${container}/${blob}\nCreated cache`);
    const stored = await azurite.getBlob(container, blob);
    expect(stored.status).toBe(200);
    expect(stored.headers['x-ms-meta-cachekey']).toBe('deps');
    expect(stored.headers['content-type']).toBe('application/octet-stream');
    expect(azurite.proxy.tunnels).toContain(`${AZURITE_ACCOUNT}.${AZURITE_DOMAIN}:443`);

    const reader = await job({}, writer.build.project_id);
    await restoreCache(reader, cacheOptions(await tempDir(), reader.build, { config: config(), ca }));
    expect(text(reader)).toMatch(/^Checking cache for deps\.\.\.\nDownloaded cache from https:\/\/devstoreaccount1\.blob\.localhost\/[^?\s]+\/deps/);
    expect(await readFile(join(reader.projectDir, 'vendor/lib/a.js'), 'utf8')).toBe('from runner A');
    for (const line of [...writer.lines, ...reader.lines]) expect(line).not.toMatch(/sig=|se=|sp=/);
  });

  it('restores a blob GitLab Runner wrote, and says "file does not exist" for none', async () => {
    const source = await tempDir();
    await writeFiles(source, { 'vendor/x.txt': 'written by gitlab-runner' });
    const zip = join(await tempDir(), 'cache.zip');
    await execa('zip', ['-q', '-r', zip, 'vendor'], { cwd: source });
    const reader = await job();
    await azurite.putBlob(container, `runner/abcdefghi/project/${reader.build.project_id}/deps`, await readFile(zip));
    await restoreCache(reader, cacheOptions(await tempDir(), reader.build, { config: config(), ca }));
    expect(await readFile(join(reader.projectDir, 'vendor/x.txt'), 'utf8')).toBe('written by gitlab-runner');

    const none = await job();
    await restoreCache(none, cacheOptions(await tempDir(), none.build, { config: config(), ca }));
    expect(text(none)).toBe('Checking cache for deps...\nWARNING: file does not exist\nWARNING: Failed to extract cache');
  });

  it('uploads a large archive in blocks on the same SAS URL', async () => {
    const store = await openCacheStore(config(), { transport: cacheTransport(ca), signal: new AbortController().signal });
    const object = `blocks/${randomBytes(4).toString('hex')}`;
    const put = await store.signPut(object, { cachekey: 'big' }, 600, new AbortController().signal);
    const file = join(await tempDir(), 'cache.zip');
    const data = randomBytes(3 * 1024 * 1024 + 17);
    await writeFile(file, data);
    await uploadCacheFile({ ...put, blocks: { singleMax: 1024 * 1024, blockSize: 1024 * 1024 } }, file, { transport: cacheTransport(ca), requestTimeoutMs: 60_000, signal: new AbortController().signal });
    const stored = await azurite.getBlob(container, object);
    expect(stored.body.equals(data)).toBe(true);
    expect(stored.headers['x-ms-meta-cachekey']).toBe('big');
  });

  it('goes on with a warning under a wrong key or an untrusted certificate', async () => {
    const wrongKey = await job({ 'vendor/a': 'a' });
    await archiveCache(wrongKey, cacheOptions(await tempDir(), wrongKey.build, { config: config({ AccountKey: Buffer.from('not the key').toString('base64') }), ca }));
    expect(text(wrongKey)).toMatch(/WARNING: https:\/\/[^?\s]+\/deps: received: 403 Forbidden.*\nWARNING: Failed to create cache$/);

    const untrusted = await job({ 'vendor/a': 'a' });
    await archiveCache(untrusted, cacheOptions(await tempDir(), untrusted.build, { config: config() }));
    expect(text(untrusted)).toMatch(/WARNING: https:\/\/[^?\s]+\/deps: .*(certificate|self.signed|issuer).*\nWARNING: Failed to create cache$/i);
  });

  it('warns once per job when the account key is missing (Entra ID is not supported) and keeps the cache local', async () => {
    const ctx = await job({ 'vendor/a': 'a' });
    await archiveCache(ctx, cacheOptions(await tempDir(), ctx.build, { config: config({ AccountKey: '' }), ca }));
    expect(text(ctx)).toMatch(/^WARNING: Unable to generate cache upload environment: \[runners\.cache\.azure\] has no AccountKey.*\nCreating cache deps\.\.\.\nCreated cache "deps".*\nCreated cache$/);
  });
});
