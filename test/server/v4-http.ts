/**
 * Raw HTTP the way GitLab Runner 14.7.1 speaks API v4 (docs/protocol-v4.md), for the v4 conformance
 * tests: JSON bodies with `token` and `info`, `JOB-TOKEN` on trace and artifacts, an inclusive
 * `Content-Range`.
 */
import { expect } from 'vitest';
import type { V4JobPayload } from '../../src/server/api/v4/payload.js';
import type { TestServer } from '../helpers/server.js';

/** Where the server is (all the request helpers need). */
export type At = Pick<TestServer, 'url'>;
import { raw, type RawOptions, type RawResponse } from './raw-http.js';

export const R14_UA = 'gitlab-runner 14.7.1 (v14.7.1; go1.19.8; linux/amd64)';

/** The features GitLab Runner 14.7.1's shell executor announces. */
export const R14_FEATURES = {
  variables: true, image: false, services: false, artifacts: true, cache: true, shared: true, upload_multiple_artifacts: true,
  upload_raw_artifacts: true, session: true, terminal: true, refspecs: true, masking: true, proxy: false, raw_variables: true,
  artifacts_exclude: true, multi_build_steps: true, trace_reset: true, trace_checksum: true, trace_size: true, vault_secrets: true,
  cancelable: true, return_exit_code: true,
};

export function r14Info(features: Record<string, boolean> = R14_FEATURES): Record<string, unknown> {
  return { name: 'gitlab-runner', version: '14.7.1', revision: '198d2720', platform: 'linux', architecture: 'amd64', executor: 'shell', shell: 'bash', features, config: { gpus: '' } };
}

/** `/api/v4` + path, with the runner's User-Agent on requests with a body. */
export function v4(base: string, method: string, path: string, options: RawOptions = {}): Promise<RawResponse> {
  const hasBody = options.json !== undefined || options.body !== undefined;
  return raw(base, method, `/api/v4${path}`, { ...options, headers: { ...(hasBody ? { 'user-agent': R14_UA } : {}), ...options.headers } });
}

/** Registers through `POST /api/v4/runners` with the instance's registration token; returns id and token. */
export async function registerV4(t: TestServer, fields: Record<string, unknown> = {}): Promise<{ id: number; token: string }> {
  const response = await v4(t.url, 'POST', '/runners', { json: { token: t.server.registrationToken, description: 'r14', run_untagged: true, locked: false, active: true, info: r14Info(), ...fields } });
  expect(response.status).toBe(201);
  return JSON.parse(response.text) as { id: number; token: string };
}

/** `POST /jobs/request` as the runner sends it. */
export function requestJob(t: At, token: string, extra: Record<string, unknown> = {}, signal?: AbortSignal): Promise<RawResponse> {
  return v4(t.url, 'POST', '/jobs/request', { json: { info: r14Info(), token, ...extra }, ...(signal ? { signal } : {}) });
}

/** Takes a job (expects 201) and returns its document. */
export async function takeJob(t: At, token: string, extra: Record<string, unknown> = {}): Promise<V4JobPayload> {
  const response = await requestJob(t, token, extra);
  expect(response.status).toBe(201);
  expect(response.headers['content-type']).toMatch(/^application\/json/);
  return JSON.parse(response.text) as V4JobPayload;
}

/** `PATCH /jobs/:id/trace` with `JOB-TOKEN` and an inclusive Content-Range from `start` (unless `range` is given). */
export function patchTrace(t: At, job: { id: number; token: string }, start: number, body: string | Buffer, range?: string | null): Promise<RawResponse> {
  const length = Buffer.byteLength(body);
  const contentRange = range === undefined ? `${start}-${start + length - 1}` : range;
  return v4(t.url, 'PATCH', `/jobs/${job.id}/trace`, {
    body,
    headers: { 'content-type': 'text/plain', 'job-token': job.token, ...(contentRange === null ? {} : { 'content-range': contentRange }) },
  });
}

/** `PUT /jobs/:id` with the job token in JSON. */
export function updateJob(t: At, job: { id: number; token: string }, fields: Record<string, unknown>): Promise<RawResponse> {
  return v4(t.url, 'PUT', `/jobs/${job.id}`, { json: { info: r14Info(), token: job.token, ...fields } });
}
