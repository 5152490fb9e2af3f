/**
 * A coordinator made of undici's MockAgent, for the client edge cases a real server cannot produce
 * on demand: a Retry-After, a timeout of a given kind, an answer lost after the request was applied.
 * Nothing reaches the network (`disableNetConnect`); every other test runs against the reference server.
 */
import { MockAgent, type Interceptable } from 'undici';
import { RunnerApiClient } from '../../src/client/runner-api.js';

export const MOCK_ORIGIN = 'http://coordinator.test';
export const API = '/ci/api/v1';

export interface MockCoordinator {
  agent: MockAgent;
  /** Where interceptors are set: `pool.intercept({ path, method }).reply(...)`. */
  pool: Interceptable;
  client: RunnerApiClient;
  close(): Promise<void>;
}

export function mockCoordinator(): MockCoordinator {
  const agent = new MockAgent({ enableCallHistory: true });
  agent.disableNetConnect();
  const client = new RunnerApiClient({ url: MOCK_ORIGIN, executor: 'shell', dispatcher: agent });
  return {
    agent,
    pool: agent.get(MOCK_ORIGIN),
    client,
    close: async () => {
      await client.close();
      await agent.close();
    },
  };
}

/** Reads a request body as MockAgent hands it over (a string, bytes, or the streamed body). */
export async function bodyText(body: unknown): Promise<string> {
  if (body === undefined || body === null) return '';
  if (typeof body === 'string') return body;
  if (body instanceof Uint8Array) return Buffer.from(body).toString('utf8');
  const chunks: Buffer[] = [];
  for await (const chunk of body as AsyncIterable<Uint8Array | string>) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks).toString('utf8');
}
