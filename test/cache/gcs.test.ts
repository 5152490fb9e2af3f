/**
 * GCS has no server to run offline: its signed URLs are checked against Google's V4 signing algorithm
 * as documented (canonical request, string to sign, RSA-SHA256), rebuilt here independently of the
 * library and verified with the service account's public key.
 */
import { createHash, generateKeyPairSync, verify } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cacheSchema } from '../../src/agent/config/cache-schema.js';
import { cacheTransport, openCacheStore, type CacheConfig } from '../../src/cache/index.js';
import { removeTempDirs, tempDir } from '../artifacts/fixtures.js';

afterEach(removeTempDirs);

const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const email = 'runner-cache@project.iam.gserviceaccount.com';
const context = { transport: cacheTransport(), signal: new AbortController().signal };

function config(gcs: Record<string, unknown>, cache: Record<string, unknown> = {}): CacheConfig {
  return cacheSchema.parse({ Type: 'gcs', ...cache, gcs: { BucketName: 'runner-cache', ...gcs } });
}

/** Google's V4 check: the signature over the canonical request the URL and headers describe. */
function verifyV4(method: string, url: URL, headers: Record<string, string>): void {
  const query = new URLSearchParams(url.search);
  const signature = query.get('X-Goog-Signature') ?? '';
  query.delete('X-Goog-Signature');
  const encode = (v: string): string => encodeURIComponent(v).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  const canonicalQuery = [...query.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, v]) => `${encode(k)}=${encode(v)}`).join('&');
  const all: Record<string, string> = { host: url.host, ...Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v])) };
  const signed = (query.get('X-Goog-SignedHeaders') ?? '').split(';');
  expect(signed).toEqual(Object.keys(all).sort());
  const canonicalHeaders = signed.map((name) => `${name}:${all[name]}\n`).join('');
  const canonicalRequest = [method, url.pathname, canonicalQuery, canonicalHeaders, signed.join(';'), 'UNSIGNED-PAYLOAD'].join('\n');
  const date = query.get('X-Goog-Date') ?? '';
  const scope = (query.get('X-Goog-Credential') ?? '').split('/').slice(1).join('/');
  const toSign = ['GOOG4-RSA-SHA256', date, scope, createHash('sha256').update(canonicalRequest).digest('hex')].join('\n');
  expect(verify('sha256', Buffer.from(toSign), publicKey, Buffer.from(signature, 'hex'))).toBe(true);
}

describe('GCS signed URLs (V4, Google\'s signer)', () => {
  it('signs a GET and a PUT of the object GitLab Runner names, with the headers the client must send', async () => {
    const store = await openCacheStore(config({ AccessID: email, PrivateKey: pem }, { MaxUploadedArchiveSize: 1000 }), context);
    const get = await store.signGet('runner/abcdefghi/project/7/deps', 3600, context.signal);
    expect(get.url.origin + get.url.pathname).toBe('https://storage.googleapis.com/runner-cache/runner/abcdefghi/project/7/deps');
    expect(get.url.searchParams.get('X-Goog-Credential')).toMatch(new RegExp(`^${email}/\\d{8}/auto/storage/goog4_request$`));
    expect(get.url.searchParams.get('X-Goog-Expires')).toBe('3600');
    verifyV4('GET', get.url, get.headers);

    const put = await store.signPut('runner/abcdefghi/project/7/deps', { cachekey: 'deps' }, 3600, context.signal);
    expect(put.headers).toEqual({ 'content-type': 'application/octet-stream', 'x-goog-content-length-range': '0,1000', 'x-goog-meta-cachekey': 'deps' });
    verifyV4('PUT', put.url, put.headers);
  });

  it('reads a service account key from CredentialsFile, and refuses what is not one', async () => {
    const dir = await tempDir();
    const file = join(dir, 'key.json');
    await writeFile(file, JSON.stringify({ type: 'service_account', client_email: email, private_key: pem }));
    const store = await openCacheStore(config({ CredentialsFile: file }), context);
    const get = await store.signGet('project/1/k', 60, context.signal);
    verifyV4('GET', get.url, get.headers);

    const user = join(dir, 'user.json');
    await writeFile(user, JSON.stringify({ type: 'authorized_user' }));
    await expect(openCacheStore(config({ CredentialsFile: user }), context)).rejects.toMatchObject({ code: 'CACHE_STORE_UNUSABLE', message: expect.stringMatching(/is not a service account key/) });
    await expect(openCacheStore(config({ AccessID: email }), context)).rejects.toMatchObject({ message: expect.stringMatching(/needs both AccessID and PrivateKey/) });
  });

  it('signs for another universe domain', async () => {
    const store = await openCacheStore(config({ AccessID: email, PrivateKey: pem, UniverseDomain: 'example-universe.test' }), context);
    const get = await store.signGet('project/1/k', 60, context.signal);
    expect(get.url.origin + get.url.pathname).toBe('https://storage.example-universe.test/runner-cache/project/1/k');
    verifyV4('GET', get.url, get.headers);
  });
});
