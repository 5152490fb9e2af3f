/**
 * The reference server in a process of its own, as a coordinator is: started by a benchmark (`serverProcess`),
 * it serves one throwaway project and prints `{ url, registrationToken, adminToken }` as one JSON line; it ends
 * on SIGTERM. Benchmarks whose figures sit beside GitLab Runner's (which ran against a separate server)
 * use it, so the server's work does not share the runner's event loop.
 */
import { rm } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { execa, type ResultPromise } from 'execa';
import { silentLogger } from '../src/log/index.js';
import { createReferenceServer } from '../src/server/index.js';
import { createGitRepo } from '../test/helpers/git.js';

export interface ServerProcess {
  url: string;
  /** The server process's pid (for its CPU and memory figures). */
  pid: number;
  registrationToken: string;
  /** Calls the server's admin API (`/admin/api/…`); the answer as JSON, or as bytes with `raw`. */
  admin<T>(path: string, init?: { method?: string; body?: unknown }): Promise<T>;
  trace(jobId: number): Promise<Buffer>;
  close(): Promise<void>;
}

/** Starts this file as a child process (under tsx, as the benchmarks run) and waits for its line. */
export async function serverProcess(): Promise<ServerProcess> {
  const child: ResultPromise = execa(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url)], { stdin: 'ignore', stderr: 'inherit', reject: false, buffer: false });
  const line = await new Promise<string>((resolve, reject) => {
    let text = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      if (text.includes('\n')) resolve(text.slice(0, text.indexOf('\n')));
    });
    child.once('exit', (code) => reject(new Error(`the server process ended (exit ${code}) before it listened`)));
  });
  const { url, registrationToken, adminToken } = JSON.parse(line) as { url: string; registrationToken: string; adminToken: string };
  const call = async (path: string, init: { method?: string; body?: unknown } = {}): Promise<Response> => {
    const response = await fetch(`${url}/admin/api${path}`, {
      method: init.method ?? 'GET',
      headers: { 'PRIVATE-TOKEN': adminToken, ...(init.body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
    });
    if (!response.ok) throw new Error(`${init.method ?? 'GET'} ${path}: ${response.status} ${await response.text()}`);
    return response;
  };
  return {
    url,
    pid: child.pid ?? 0,
    registrationToken,
    admin: async <T>(path: string, init?: { method?: string; body?: unknown }) => (await (await call(path, init)).json()) as T,
    trace: async (jobId) => Buffer.from(await (await call(`/jobs/${jobId}/trace`)).arrayBuffer()),
    close: async () => {
      child.kill('SIGTERM');
      await child;
    },
  };
}

async function serve(): Promise<void> {
  const repo = await createGitRepo({ 'README.md': '# bench\n' });
  const server = await createReferenceServer({ projects: [{ name: 'bench/project', path: repo }], logger: silentLogger() });
  process.stdout.write(`${JSON.stringify({ url: server.url, registrationToken: server.registrationToken, adminToken: server.adminToken })}\n`);
  await new Promise<void>((resolve) => process.once('SIGTERM', () => resolve()));
  await server.close();
  await rm(repo, { recursive: true, force: true });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await serve();
