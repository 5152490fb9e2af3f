/**
 * An apiserver answer that asks to be tried again (a 5xx or 429 with `Retry-After`, as Kubernetes
 * sends while a fresh namespace's service account has no token yet) is retried after the wait it
 * names; one without `Retry-After`, or one that keeps asking, fails with the API's own message.
 * A local HTTP server stands in for the apiserver: the real one gives this answer only in a race.
 */
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { KubeApi, KubernetesApiError, type ApiRetry } from '../../../src/executors/kubernetes/api.js';
import { connect } from '../../../src/executors/kubernetes/connection.js';
import { createPki, type Pki } from '../../helpers/pki.js';

const NO_TOKEN = { kind: 'Status', apiVersion: 'v1', status: 'Failure', message: 'No API token found for service account "default", retry after the token is automatically created and added to the service account', reason: 'ServerTimeout', code: 500 };

let server: Server | undefined;
let pki: Pki;
beforeAll(async () => {
  pki = await createPki();
});
afterEach(() => server?.close());

type Answer = { status: number; headers?: Record<string, string>; body: unknown } | 'reset';

/** An apiserver whose answers to POST pods are `answers` in turn (the last one repeated); `reset` drops the connection. */
async function apiserver(answers: Answer[], retry?: ApiRetry): Promise<{ api: KubeApi; posts: number[] }> {
  const posts: number[] = [];
  server = createServer({ cert: await readFile(pki.serverCert), key: await readFile(pki.serverKey) }, (req, res) => {
    req.resume();
    const answer = answers[Math.min(posts.length, answers.length - 1)]!;
    posts.push(Date.now());
    if (answer === 'reset') {
      req.socket.destroy();
      return;
    }
    res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
    res.end(JSON.stringify(answer.body));
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { api: new KubeApi(connect({ host: `https://127.0.0.1:${port}`, bearer_token: 't', ca_file: pki.caCert }), retry), posts };
}

const create = (api: KubeApi, signal?: AbortSignal) =>
  api.call('creating pod p', signal, (c) => api.core.createNamespacedPod({ namespace: 'n', body: { metadata: { name: 'p' } } }, c));

describe('KubeApi.call', () => {
  it('waits out a 500 that says Retry-After and then succeeds', async () => {
    const { api, posts } = await apiserver([
      { status: 500, headers: { 'retry-after': '1' }, body: NO_TOKEN },
      { status: 201, body: { kind: 'Pod', apiVersion: 'v1', metadata: { name: 'p', namespace: 'n' } } },
    ]);
    const pod = await create(api);
    expect(pod.metadata?.name).toBe('p');
    expect(posts).toHaveLength(2);
    expect(posts[1]! - posts[0]!).toBeGreaterThanOrEqual(900);
  });

  it('fails at once with the API\'s message when no Retry-After is given', async () => {
    const { api, posts } = await apiserver([{ status: 500, body: NO_TOKEN }]);
    const error = await create(api).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(KubernetesApiError);
    expect((error as KubernetesApiError).message).toBe(`creating pod p: ${NO_TOKEN.message}`);
    expect((error as KubernetesApiError).status).toBe(500);
    expect(posts).toHaveLength(1);
  });

  it('does not retry a refusal (403) even with Retry-After', async () => {
    const { api, posts } = await apiserver([{ status: 403, headers: { 'retry-after': '1' }, body: { kind: 'Status', message: 'pods is forbidden', code: 403 } }]);
    await expect(create(api)).rejects.toThrow('creating pod p: pods is forbidden');
    expect(posts).toHaveLength(1);
  });

  it('stops waiting when the signal aborts', async () => {
    const { api, posts } = await apiserver([{ status: 429, headers: { 'retry-after': '10' }, body: { kind: 'Status', message: 'slow down', code: 429 } }]);
    const stop = new AbortController();
    const pending = create(api, stop.signal).catch((e: unknown) => e);
    while (posts.length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    stop.abort(new Error('job canceled'));
    expect(((await pending) as Error).message).toBe('job canceled');
    expect(posts).toHaveLength(1);
  });

  it('tries a request that failed on the way again, retry_limit tries in all, waits capped by retry_backoff_max', async () => {
    const created = { status: 201, body: { kind: 'Pod', apiVersion: 'v1', metadata: { name: 'p', namespace: 'n' } } };
    const twice = await apiserver(['reset', 'reset', created], { limit: 5, backoffMaxMs: 500, limits: {} });
    expect((await create(twice.api)).metadata?.name).toBe('p');
    expect(twice.posts).toHaveLength(3);
    server?.close();
    const once = await apiserver(['reset', created], { limit: 1, backoffMaxMs: 500, limits: {} });
    await expect(create(once.api)).rejects.toThrow(/creating pod p: cannot reach the Kubernetes API/);
    expect(once.posts).toHaveLength(1);
    server?.close();
    const keyed = await apiserver([{ status: 409, body: { kind: 'Status', message: 'the object has been modified', code: 409 } }, created], { limit: 1, backoffMaxMs: 500, limits: { 'has been modified': 2 } });
    expect((await create(keyed.api)).metadata?.name).toBe('p');
    expect(keyed.posts).toHaveLength(2);
  });
});
