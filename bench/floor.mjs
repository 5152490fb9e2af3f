/**
 * The memory floor of bench/idle.ts: a bare node that has loaded and used once each library the
 * daemon stands on (undici, pino, zod, execa, yargs, chokidar, tar), then idles. What the idle daemon
 * takes above this is the runner's own. Plain JavaScript run by node itself (no tsx), started with the
 * daemon's V8 flags: `node [flags] bench/floor.mjs <scratch dir>`. Prints `ready` when it has used
 * them all; keeps the watch open and the event loop alive, as the daemon does, until stopped.
 */
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { watch } from 'chokidar';
import { execa } from 'execa';
import { pino } from 'pino';
import { create } from 'tar';
import { request } from 'undici';
import yargs from 'yargs';
import { z } from 'zod';

const dir = process.argv[2];
if (!dir) throw new Error('usage: node bench/floor.mjs <scratch dir>');

// yargs: a command line like the daemon's.
const argv = await yargs(['run', '--config', join(dir, 'config.toml')])
  .command('run', 'the daemon', (y) => y.option('config', { alias: 'c', type: 'string' }))
  .strict()
  .parseAsync();

// zod: a small schema, parsed once.
const config = z.strictObject({ concurrent: z.int().min(1).default(1), url: z.url(), runners: z.array(z.strictObject({ name: z.string() })).default([]) }).parse({ url: 'http://127.0.0.1/' });

// pino: a synchronous destination, one line.
const logger = pino({ base: null }, pino.destination({ dest: '/dev/null', sync: true }));
logger.child({ component: 'floor' }).info({ config: argv.config, concurrent: config.concurrent }, 'floor started');

// undici: one request to a local server.
const server = createServer((_req, res) => res.end('ok'));
await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(undefined)));
const address = server.address();
const response = await request(`http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/`);
await response.body.text();
server.closeAllConnections();
server.close();

// execa: one process.
await execa('true');

// tar: one gzipped archive.
writeFileSync(join(dir, 'a.txt'), 'floor\n');
await create({ gzip: true, file: join(dir, 'a.tgz'), cwd: dir }, ['a.txt']);

// chokidar: a watch that stays open, as the daemon's watch of its config file.
const watcher = watch(join(dir, 'a.txt'));
await new Promise((resolve) => watcher.once('ready', resolve));

setInterval(() => undefined, 3000);
process.stdout.write('ready\n');
