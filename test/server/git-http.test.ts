import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { AddressInfo } from 'node:net';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGitHttpHandler } from '../../src/server/git/http-backend.js';
import { silentLogger } from '../../src/log/index.js';

const TOKEN = 'build-token-1234';

/** The git client's environment: no prompts, no user or system config (credential helpers!). */
const clientEnv = {
  GIT_TERMINAL_PROMPT: '0',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_ASKPASS: '',
  SSH_ASKPASS: '',
};
const identity = ['-c', 'user.name=Test', '-c', 'user.email=test@example.invalid', '-c', 'commit.gpgsign=false'];

async function git(cwd: string, ...args: string[]) {
  return execa('git', [...identity, ...args], { cwd, env: clientEnv, reject: false, stdin: 'ignore' });
}

async function gitOk(cwd: string, ...args: string[]): Promise<string> {
  const result = await git(cwd, ...args);
  if (result.exitCode !== 0) throw new Error(`git ${args.join(' ')} failed:\n${result.stderr}`);
  return result.stdout.trim();
}

interface Seen {
  method: string;
  url: string;
  status: number;
  handled: boolean;
  headers: IncomingHttpHeaders;
}

interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** Sends a request with `path` exactly as written (fetch would normalise dot segments away). */
function rawRequest(
  port: number,
  path: string,
  options: { method?: string; headers?: Record<string, string>; body?: Buffer } = {},
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method: options.method ?? 'GET', headers: options.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

const basic = (user: string, password: string): string => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

/** A pkt-line (git's length-prefixed framing). */
const pkt = (line: string): string => `${(line.length + 4).toString(16).padStart(4, '0')}${line}`;

/** Pids of processes whose environment has GIT_PROJECT_ROOT=root (i.e. CGI programs serving that repo). */
async function backendPids(root: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const environ = await readFile(`/proc/${entry}/environ`).catch(() => Buffer.alloc(0));
    if (environ.toString('utf8').split('\0').includes(`GIT_PROJECT_ROOT=${root}`)) pids.push(Number(entry));
  }
  return pids;
}

async function waitFor(condition: () => Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('git smart HTTP handler', () => {
  let work: string;
  let repo: string;
  let secretRepo: string;
  let secretSha: string;
  let server: Server;
  let port: number;
  let base: string;
  const seen: Seen[] = [];
  const resolved: string[] = [];

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'ci-runner-git-http-'));
    repo = join(work, 'project');
    secretRepo = join(work, 'secret');
    for (const dir of [repo, secretRepo]) await gitOk(work, 'init', '-q', '-b', 'main', dir);
    await writeFile(join(secretRepo, 'secret.txt'), 'do not serve\n');
    await gitOk(secretRepo, 'add', '.');
    await gitOk(secretRepo, 'commit', '-q', '-m', 'secret');
    secretSha = await gitOk(secretRepo, 'rev-parse', 'HEAD');
    await writeFile(join(repo, 'README.md'), '# project\n');
    await gitOk(repo, 'add', '.');
    await gitOk(repo, 'commit', '-q', '-m', 'first');
    // Many tagged commits: a clone then wants > 1 KiB of refs, so the client gzips its request.
    for (let i = 0; i < 40; i++) {
      await gitOk(repo, 'commit', '-q', '--allow-empty', '-m', `commit ${i}`);
      await gitOk(repo, 'tag', `release-${String(i).padStart(3, '0')}-with-a-long-name`);
    }
    await writeFile(join(repo, 'app.txt'), 'version 1\n');
    await gitOk(repo, 'add', '.');
    await gitOk(repo, 'commit', '-q', '-m', 'app');

    const handler = createGitHttpHandler({
      resolveProject: (name) => {
        resolved.push(name);
        return name === 'group/project' ? repo : undefined;
      },
      authorize: (project, username, password) => project === 'group/project' && username === 'gitlab-ci-token' && password === TOKEN,
      logger: silentLogger(),
      baseUrl: () => `http://127.0.0.1:${port}`,
    });
    server = createServer((req, res) => {
      const pathname = (req.url ?? '/').split('?')[0] ?? '/';
      const entry: Seen = { method: req.method ?? '', url: req.url ?? '', status: 0, handled: false, headers: req.headers };
      seen.push(entry);
      res.on('finish', () => (entry.status = res.statusCode));
      void handler(req, res, pathname).then((handled) => {
        entry.handled = handled;
        if (!handled) res.writeHead(418).end('not git\n');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
    base = `127.0.0.1:${port}/group/project.git`;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await rm(work, { recursive: true, force: true });
  });

  it('clones with the build token and checks out the commit', async () => {
    const dest = join(work, 'clone-ok');
    await gitOk(work, 'clone', '-q', `http://gitlab-ci-token:${TOKEN}@${base}`, dest);
    expect(await gitOk(dest, 'rev-parse', 'HEAD')).toBe(await gitOk(repo, 'rev-parse', 'HEAD'));
    expect(await readFile(join(dest, 'app.txt'), 'utf8')).toBe('version 1\n');
    expect(await gitOk(dest, 'tag', '--list')).toContain('release-039-with-a-long-name');
  });

  it('inflates gzip request bodies that git clients send for large negotiations (protocol v0 and v2)', async () => {
    for (const version of ['0', '2']) {
      const dest = join(work, `clone-v${version}`);
      const before = seen.length;
      await gitOk(work, '-c', `protocol.version=${version}`, 'clone', '-q', '--mirror', `http://gitlab-ci-token:${TOKEN}@${base}`, dest);
      const posts = seen.slice(before).filter((entry) => entry.method === 'POST');
      expect(posts.some((entry) => entry.headers['content-encoding'] === 'gzip')).toBe(true);
      expect(posts.every((entry) => entry.status === 200)).toBe(true);
      expect(await gitOk(dest, 'rev-parse', 'main')).toBe(await gitOk(repo, 'rev-parse', 'main'));
    }
  });

  it('speaks protocol v2 when the client asks for it with Git-Protocol', async () => {
    const response = await rawRequest(port, '/group/project.git/info/refs?service=git-upload-pack', {
      headers: { Authorization: basic('gitlab-ci-token', TOKEN), 'Git-Protocol': 'version=2' },
    });
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toBe('application/x-git-upload-pack-advertisement');
    expect(response.body.toString('latin1')).toContain('version 2');
  });

  it('refuses a clone without credentials with 401 and a Basic challenge', async () => {
    const before = seen.length;
    const result = await git(work, 'clone', '-q', `http://${base}`, join(work, 'clone-anon'));
    expect(result.exitCode).not.toBe(0);
    expect(seen.slice(before).map((entry) => entry.status)).toEqual([401]);
    const response = await rawRequest(port, '/group/project.git/info/refs?service=git-upload-pack');
    expect(response.status).toBe(401);
    expect(response.headers['www-authenticate']).toBe('Basic realm="ci-runner"');
  });

  it('refuses a clone with a wrong token or user', async () => {
    const before = seen.length;
    const result = await git(work, 'clone', '-q', `http://gitlab-ci-token:wrong@${base}`, join(work, 'clone-wrong'));
    expect(result.exitCode).not.toBe(0);
    expect(result.stderr).toMatch(/Authentication failed|401/);
    expect(seen.slice(before).every((entry) => entry.status === 401)).toBe(true);
    const response = await rawRequest(port, '/group/project.git/info/refs?service=git-upload-pack', {
      headers: { Authorization: basic('someone-else', TOKEN) },
    });
    expect(response.status).toBe(401);
    const garbage = await rawRequest(port, '/group/project.git/info/refs?service=git-upload-pack', {
      headers: { Authorization: 'Basic !!!not-base64' },
    });
    expect(garbage.status).toBe(401);
  });

  it('makes a shallow clone with --depth 1', async () => {
    const dest = join(work, 'clone-shallow');
    await gitOk(work, 'clone', '-q', '--depth', '1', '--branch', 'main', `http://gitlab-ci-token:${TOKEN}@${base}`, dest);
    expect(await gitOk(dest, 'rev-list', '--count', 'HEAD')).toBe('1');
    expect((await stat(join(dest, '.git', 'shallow'))).isFile()).toBe(true);
    expect(await gitOk(dest, 'rev-parse', 'HEAD')).toBe(await gitOk(repo, 'rev-parse', 'HEAD'));
  });

  it('fetches new commits into an existing clone', async () => {
    const dest = join(work, 'clone-fetch');
    await gitOk(work, 'clone', '-q', `http://gitlab-ci-token:${TOKEN}@${base}`, dest);
    await writeFile(join(repo, 'app.txt'), 'version 2\n');
    await gitOk(repo, 'commit', '-q', '-am', 'app v2');
    const head = await gitOk(repo, 'rev-parse', 'HEAD');
    await gitOk(dest, 'fetch', '-q', '--prune', 'origin', '+refs/heads/*:refs/remotes/origin/*');
    expect(await gitOk(dest, 'rev-parse', 'origin/main')).toBe(head);
    await gitOk(dest, 'checkout', '-q', '-f', head);
    expect(await readFile(join(dest, 'app.txt'), 'utf8')).toBe('version 2\n');
  });

  it('refuses pushes with 403 and leaves the repository unchanged', async () => {
    const dest = join(work, 'clone-push');
    await gitOk(work, 'clone', '-q', `http://gitlab-ci-token:${TOKEN}@${base}`, dest);
    const head = await gitOk(repo, 'rev-parse', 'HEAD');
    await writeFile(join(dest, 'pushed.txt'), 'nope\n');
    await gitOk(dest, 'add', '.');
    await gitOk(dest, 'commit', '-q', '-m', 'try to push');
    const before = seen.length;
    const result = await git(dest, 'push', 'origin', 'HEAD:refs/heads/pushed');
    expect(result.exitCode).not.toBe(0);
    expect(seen.slice(before).map((entry) => entry.status)).toContain(403);
    expect(await gitOk(repo, 'rev-parse', 'HEAD')).toBe(head);
    expect((await git(repo, 'rev-parse', '--verify', '--quiet', 'refs/heads/pushed')).exitCode).not.toBe(0);
    const direct = await rawRequest(port, '/group/project.git/git-receive-pack', {
      method: 'POST',
      headers: { Authorization: basic('gitlab-ci-token', TOKEN), 'Content-Type': 'application/x-git-receive-pack-request' },
      body: Buffer.from('0000'),
    });
    expect(direct.status).toBe(403);
  });

  it('serves a chunked, gzip-encoded upload-pack request body', async () => {
    const sha = await gitOk(repo, 'rev-parse', 'HEAD');
    const body = gzipSync(Buffer.from(`${pkt(`want ${sha}\n`)}0000${pkt('done\n')}`));
    const response = await new Promise<RawResponse>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port,
          path: '/group/project.git/git-upload-pack',
          method: 'POST',
          headers: {
            Authorization: basic('gitlab-ci-token', TOKEN),
            'Content-Type': 'application/x-git-upload-pack-request',
            'Content-Encoding': 'gzip',
            'Transfer-Encoding': 'chunked',
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
        },
      );
      req.on('error', reject);
      // Several chunks, so the body really arrives chunked.
      for (let offset = 0; offset < body.length; offset += 16) req.write(body.subarray(offset, offset + 16));
      req.end();
    });
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toBe('application/x-git-upload-pack-result');
    const text = response.body.toString('latin1');
    expect(text.startsWith('0008NAK\n')).toBe(true);
    expect(text).toContain('PACK');
  });

  it('answers 404 for a project it does not know', async () => {
    const response = await rawRequest(port, '/group/other.git/info/refs?service=git-upload-pack', {
      headers: { Authorization: basic('gitlab-ci-token', TOKEN) },
    });
    expect(response.status).toBe(404);
  });

  it('leaves paths that are not git URLs to the caller', async () => {
    for (const path of ['/ci/api/v1/runners/register', '/admin/api/jobs', '/group/project', '/', '/project.git/info/refs']) {
      const response = await rawRequest(port, path);
      expect(response.status, path).toBe(418);
    }
  });

  it.each([
    '/group/project.git/../../secret.git/info/refs?service=git-upload-pack',
    '/group/project.git/%2e%2e/%2e%2e/secret/info/refs?service=git-upload-pack',
    '/group/..%2F..%2Fsecret.git/info/refs?service=git-upload-pack',
    '/%2e%2e/secret.git/info/refs?service=git-upload-pack',
    '/group/project.git/..%2F..%2Fsecret%2Finfo/refs?service=git-upload-pack',
    '/group/project.git/info/refs%2F..%2F..%2F..%2Fsecret%2Finfo%2Frefs?service=git-upload-pack',
    '/group/project.git/HEAD',
    '/group/project.git/config',
    '/group/project.git/objects/info/packs',
    '/group/project.git/info/refs',
  ])('serves nothing outside the smart protocol endpoints for %s', async (path) => {
    const response = await rawRequest(port, path, { headers: { Authorization: basic('gitlab-ci-token', TOKEN) } });
    expect([403, 404, 418]).toContain(response.status);
    const text = response.body.toString('latin1');
    expect(text).not.toContain(secretSha);
    expect(text).not.toContain('[core]');
    expect(text).not.toMatch(/[0-9a-f]{40}/);
    expect(resolved.every((name) => /^[A-Za-z0-9_][\w.-]*\/[A-Za-z0-9_][\w.-]*$/.test(name))).toBe(true);
  });

  it('kills git http-backend when the client disconnects mid-request', async () => {
    const req = request({
      host: '127.0.0.1',
      port,
      path: '/group/project.git/git-upload-pack',
      method: 'POST',
      headers: {
        Authorization: basic('gitlab-ci-token', TOKEN),
        'Content-Type': 'application/x-git-upload-pack-request',
        'Transfer-Encoding': 'chunked',
      },
    });
    req.on('error', () => undefined);
    // A body that never ends: the backend waits for the rest of it.
    req.write(pkt(`want ${await gitOk(repo, 'rev-parse', 'HEAD')}\n`));
    await waitFor(async () => (await backendPids(repo)).length > 0, 'git http-backend to start');
    req.destroy();
    await waitFor(async () => (await backendPids(repo)).length === 0, 'git http-backend to be killed');
  });
});
