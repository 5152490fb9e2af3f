/**
 * The transport takes undici's dispatchers from their own modules (src/client/undici.ts): they must be
 * the very classes undici's index exports, with the methods the index adds to them, and loading the
 * transport must leave undici's index (fetch, WebSocket, the mocks, Node's bundled undici) unloaded.
 * The last two are checked in a process of their own (the built CLI's modules): in this one, importing
 * undici's index for the first check has already added those methods.
 */
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import * as undiciIndex from 'undici';
import { describe, expect, it } from 'vitest';
import { Agent, Pool, ProxyAgent } from '../../src/client/undici.js';

const DIST = fileURLToPath(new URL('../../dist/client/', import.meta.url));

describe("undici's parts", () => {
  it('are the classes undici exports', () => {
    expect(Agent).toBe(undiciIndex.Agent);
    expect(Pool).toBe(undiciIndex.Pool);
    expect(ProxyAgent).toBe(undiciIndex.ProxyAgent);
  });

  it("the transport requests with them without loading undici's index", async () => {
    const script = `
      import { createServer } from 'node:http';
      import { createRequire } from 'node:module';
      const { send, readText, Transport } = await import(${JSON.stringify(`${DIST}transport.js`)});
      const server = createServer((_req, res) => res.end('hello'));
      await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
      const transport = new Transport();
      const response = await send(transport, { method: 'GET', url: new URL('http://127.0.0.1:' + server.address().port + '/') });
      const text = await readText(response);
      await transport.close();
      server.close();
      const { Pool } = await import(${JSON.stringify(`${DIST}undici.js`)});
      const methods = ['request', 'stream', 'pipeline', 'upgrade', 'connect'].filter((m) => typeof Pool.prototype[m] === 'function');
      const loaded = Object.keys(createRequire(import.meta.url).cache).filter((f) => f.includes('/node_modules/undici/'));
      console.log(JSON.stringify({ status: response.status, text, methods, loaded }));`;
    const { stdout } = await execa(process.execPath, ['--input-type=module', '-e', script], { env: { NO_PROXY: '*' } });
    const result = JSON.parse(stdout) as { status: number; text: string; methods: string[]; loaded: string[] };
    expect(result).toMatchObject({ status: 200, text: 'hello', methods: ['request', 'stream', 'pipeline', 'upgrade', 'connect'] });
    expect(result.loaded.some((file) => file.endsWith('/undici/lib/dispatcher/agent.js'))).toBe(true);
    expect(result.loaded.filter((file) => /\/undici\/(index\.js|lib\/web\/)/.test(file))).toEqual([]);
  });
});
