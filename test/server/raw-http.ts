/** Raw HTTP the way the legacy v1.11.5 client speaks it (docs/protocol-v1.md §2.2), for conformance tests. */
import { request } from 'undici';

export const LEGACY_UA = 'gitlab-ci-multi-runner 1.11.5 (1-11-stable; go1.7.5; linux/amd64)';

export const LEGACY_INFO = {
  name: 'gitlab-ci-multi-runner',
  version: '1.11.5',
  revision: 'cbfcb5c',
  platform: 'linux',
  architecture: 'amd64',
  executor: 'shell',
  features: { variables: true, image: false, services: false, features: true, cache: true },
};

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  body: Buffer;
}

export interface RawOptions {
  json?: unknown;
  form?: Record<string, string>;
  body?: string | Buffer | AsyncIterable<Uint8Array>;
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

/** Sends one request; never throws for HTTP statuses. */
export async function raw(base: string, method: string, path: string, options: RawOptions = {}): Promise<RawResponse> {
  const headers: Record<string, string> = { ...options.headers };
  let body = options.body;
  if (options.json !== undefined) {
    body = JSON.stringify(options.json);
    headers['content-type'] ??= 'application/json';
    headers.accept ??= 'application/json';
  } else if (options.form !== undefined) {
    body = new URLSearchParams(options.form).toString();
    headers['content-type'] ??= 'application/x-www-form-urlencoded';
  }
  if (body !== undefined) headers['user-agent'] ??= LEGACY_UA;
  const response = await request(`${base}${path}`, {
    method: method as 'GET',
    headers,
    ...(body !== undefined ? { body: body as string } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  const bytes = Buffer.from(await response.body.arrayBuffer());
  return { status: response.statusCode, headers: response.headers, text: bytes.toString('utf8'), body: bytes };
}

/** `/ci/api/v1` + path. */
export function api(base: string, method: string, path: string, options: RawOptions = {}): Promise<RawResponse> {
  return raw(base, method, `/ci/api/v1${path}`, options);
}
