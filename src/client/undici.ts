/**
 * The parts of undici the transport uses, each loaded from its own module. undici's index loads all of
 * undici — fetch, WebSocket, EventSource, the cache, the mocks — and its cookies module reads a web
 * global that makes Node compile its own bundled copy of undici too: about 70 ms of CPU at every start
 * of a command that talks HTTP (`exec`, `run-once`, `register`), a tenth of a one-job `exec`, for
 * nothing the runner uses. undici has no `exports` map, so these files are part of what it publishes;
 * test/client/undici.test.ts holds them equal to the index's exports, so an upgrade that moves one
 * fails there rather than at run time.
 */
import { createRequire } from 'node:module';
import type * as Undici from 'undici';

const require = createRequire(import.meta.url);

export const Agent = require('undici/lib/dispatcher/agent.js') as typeof Undici.Agent;
export type Agent = Undici.Agent;
export const Pool = require('undici/lib/dispatcher/pool.js') as typeof Undici.Pool;
export type Pool = Undici.Pool;
export const ProxyAgent = require('undici/lib/dispatcher/proxy-agent.js') as typeof Undici.ProxyAgent;
export type ProxyAgent = Undici.ProxyAgent;

/**
 * The methods every dispatcher has (`request`, `stream`, `pipeline`, `upgrade`, `connect`), which
 * undici's index adds to the dispatchers' common prototype; undici itself relies on them (a
 * `ProxyAgent` tunnels with its pool's `connect`). Added here the same way, once.
 */
const Dispatcher = require('undici/lib/dispatcher/dispatcher.js') as typeof Undici.Dispatcher;
Object.assign(Dispatcher.prototype, require('undici/lib/api/index.js') as object);
