/**
 * A minimal legacy v1 runner speaking raw HTTP (JSON bodies, `.json` suffixes, BUILD-TOKEN header,
 * chunked multipart upload), to drive pipelines in tests without depending on our own client.
 */
import { expect } from 'vitest';
import type { BuildPayload } from '../../src/protocol/types.js';
import { api, LEGACY_INFO } from './raw-http.js';

const BOUNDARY = 'legacyboundary0123456789abcdef';

async function* multipart(file: Buffer, filename: string): AsyncIterable<Uint8Array> {
  yield Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: application/octet-stream\r\n\r\n`);
  yield file;
  yield Buffer.from(`\r\n--${BOUNDARY}--\r\n`);
}

export class LegacyRunner {
  constructor(
    readonly url: string,
    readonly token: string,
  ) {}

  /** E4; the build or undefined on 204. */
  async poll(): Promise<BuildPayload | undefined> {
    const response = await api(this.url, 'POST', '/builds/register.json', { json: { info: LEGACY_INFO, token: this.token } });
    if (response.status === 204) return undefined;
    expect(response.status).toBe(201);
    return JSON.parse(response.text) as BuildPayload;
  }

  async update(build: BuildPayload, state: 'running' | 'success' | 'failed', trace?: string): Promise<number> {
    const response = await api(this.url, 'PUT', `/builds/${build.id}.json`, {
      json: { info: LEGACY_INFO, token: this.token, state, ...(trace !== undefined ? { trace } : {}) },
    });
    return response.status;
  }

  async patch(build: BuildPayload, start: number, text: string): Promise<{ status: number; buildStatus: string | undefined; range: string | undefined }> {
    const body = Buffer.from(text);
    const response = await api(this.url, 'PATCH', `/builds/${build.id}/trace.txt`, {
      body,
      headers: { 'content-type': 'text/plain', 'content-range': `${start}-${start + body.byteLength}`, 'build-token': build.token },
    });
    return { status: response.status, buildStatus: response.headers['build-status'] as string | undefined, range: response.headers.range as string | undefined };
  }

  async upload(build: BuildPayload, file: Buffer, expireIn?: string): Promise<number> {
    const query = expireIn ? `?expire_in=${encodeURIComponent(expireIn).replace(/%20/g, '+')}` : '?';
    const response = await api(this.url, 'POST', `/builds/${build.id}/artifacts${query}`, {
      body: multipart(file, 'artifacts.zip'),
      headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}`, 'build-token': build.token },
    });
    return response.status;
  }

  async download(id: number, token: string): Promise<{ status: number; body: Buffer }> {
    const response = await api(this.url, 'GET', `/builds/${id}/artifacts`, { headers: { 'build-token': token } });
    return { status: response.status, body: response.body };
  }

  /** Runs a build to completion: running, one trace part, optional artifacts, final state. */
  async complete(build: BuildPayload, state: 'success' | 'failed', artifacts?: Buffer): Promise<void> {
    expect(await this.update(build, 'running')).toBe(200);
    const line = `running ${build.name}\n`;
    expect((await this.patch(build, 0, line)).status).toBe(202);
    if (artifacts) expect(await this.upload(build, artifacts, '1 week')).toBe(201);
    expect(await this.update(build, state, `${line}done: ${state}\n`)).toBe(200);
  }
}
