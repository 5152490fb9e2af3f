/**
 * Token prefixes (issue 34, item 10): a token that starts with one of GitLab's prefixes, or with one
 * the coordinator sends in `features.token_mask_prefixes`, reaches the log as `<prefix>[MASKED]`, as
 * GitLab Runner 19 writes it, however the job's output is split. Against the reference server over
 * /api/v4, and against a coordinator that rewrites the job it hands out with a hostile prefix list
 * (long, many entries, regular-expression characters): its prefixes are literal, the 15 shortest are
 * used, and the daemon's event loop keeps turning.
 */
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runnerSchema } from '../../src/agent/config/schema.js';
import { defaultServices } from '../../src/agent/services.js';
import { silentLogger } from '../../src/log/index.js';
import { workDirs } from '../cli/helpers.js';
import { runOnce } from '../helpers/run-once.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

let t: TestServer;
let token: string;
beforeAll(async () => {
  t = await startTestServer();
  ({ token } = await t.registerRunner());
});
afterAll(async () => {
  await t.close();
});

/** Runs the first job of `yaml` over /api/v4 through `url` (the server's by default); its trace, and the event loop's longest stall meanwhile. */
async function runV4Job(yaml: string, options: { variables?: Record<string, string>; url?: string; featureFlags?: Record<string, boolean> } = {}) {
  const d = await workDirs();
  const p = await t.pipeline(yaml, options.variables, Object.fromEntries(Object.keys(options.variables ?? {}).map((key) => [key, { masked: false }])));
  const runner = runnerSchema.parse({ name: 'tokens', url: options.url ?? t.url, token, api: 'v4', builds_dir: d.builds, cache_dir: d.cache, trace_update_interval: 0.2, ...(options.featureFlags ? { feature_flags: options.featureFlags } : {}) });
  const never = new AbortController().signal;
  let last = performance.now();
  let stallMs = 0;
  const timer = setInterval(() => {
    stallMs = Math.max(stallMs, performance.now() - last);
    last = performance.now();
  }, 50);
  try {
    await runOnce({ runner, services: defaultServices(silentLogger()), waitTimeoutMs: 20_000, pollIntervalMs: 200, stopWaiting: never, stopJob: never });
  } finally {
    clearInterval(timer);
  }
  const id = p.jobs[0]!.id;
  return { status: t.server.getJob(id)?.status, trace: (await t.server.getTrace(id)).toString('utf8'), stallMs };
}

/** A script line printing `text` in two writes, `cut` characters apart, with a pause between. */
function printSplit(text: string, cut: number): string {
  return `    - 'printf "%s" "${text.slice(0, cut)}"; sleep 0.3; printf "%s\\n" "${text.slice(cut)}"'`;
}

describe('token prefixes over /api/v4', () => {
  it('masks the token after glpat- and GitLab\'s other prefixes, keeping the prefix, also across writes', async () => {
    const pat = 'glpat-Ab1_x.y-Z=9';
    const yaml = [
      'j:',
      '  script:',
      `    - 'echo "pat: ${pat} end"'`,
      printSplit(`split: ${pat}`, 10),
      printSplit(`split: ${pat}`, 14),
      '    - \'echo "runner: glrt-t1_AbCdEf deploy: gldt-XyZ session: _gitlab_session=abc123;"\'',
      '    - \'echo "bare glpat- stays"\'',
      '',
    ].join('\n');
    const { status, trace } = await runV4Job(yaml);
    expect(status, trace).toBe('success');
    expect(trace).toContain('pat: glpat-[MASKED] end');
    expect(trace.match(/split: glpat-\[MASKED\]\n/g)).toHaveLength(2);
    expect(trace).toContain('runner: glrt-[MASKED] deploy: gldt-[MASKED] session: _gitlab_session=[MASKED];');
    expect(trace).toContain('bare glpat- stays');
    // Only the echo of the split commands, whose text holds the token in two parts, shows a part of it.
    expect(trace.split('\n').filter((line) => line.includes('Ab1_x') && !line.includes('$ printf'))).toEqual([]);
  });

  it('masks only glpat- when the job turns FF_MASK_ALL_DEFAULT_TOKENS off', async () => {
    const { status, trace } = await runV4Job("j:\n  script:\n    - 'echo \"glpat-one glrt-two\"'\n", { variables: { FF_MASK_ALL_DEFAULT_TOKENS: 'false' } });
    expect(status, trace).toBe('success');
    expect(trace).toContain('glpat-[MASKED] glrt-two');
  });

  it('masks only glpat- when the runner\'s [runners.feature_flags] turns it off, whatever the job says (the runner wins)', async () => {
    const yaml = "j:\n  script:\n    - 'echo \"glpat-one glrt-two\"'\n";
    const { status, trace } = await runV4Job(yaml, { variables: { FF_MASK_ALL_DEFAULT_TOKENS: 'true' }, featureFlags: { FF_MASK_ALL_DEFAULT_TOKENS: false } });
    expect(status, trace).toBe('success');
    expect(trace).toContain('glpat-[MASKED] glrt-two');
    const on = await runV4Job(yaml, { variables: { FF_MASK_ALL_DEFAULT_TOKENS: 'false' }, featureFlags: { FF_MASK_ALL_DEFAULT_TOKENS: true } });
    expect(on.trace).toContain('glpat-[MASKED] glrt-[MASKED]');
  });
});

describe('a coordinator\'s hostile token prefix list', () => {
  let proxy: Server;
  let proxyUrl: string;
  const hostile = ['myco_', '(x|y)+', 'a.*b-', ...Array.from({ length: 5000 }, (_, i) => `filler-prefix-number-${i}-`), 'z'.repeat(200_000)];
  beforeAll(async () => {
    proxy = await rewritingProxy(t.url, (job) => {
      (job.features as Record<string, unknown>).token_mask_prefixes = hostile;
    });
    proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => proxy.close(resolve));
  });

  it('is read literally, the 15 shortest used as GitLab Runner uses them, without stalling the daemon', async () => {
    const yaml = [
      'j:',
      '  script:',
      '    - \'echo "custom: myco_secret1 regex: (x|y)+tok1 a.*b-tok2 a-b-notmasked xy+notmasked"\'',
      printSplit('split: myco_secret2', 10),
      // The 16th shortest of GitLab's own is left out, as GitLab Runner leaves it out.
      '    - \'echo "agent: glagent-visible"\'',
      '',
    ].join('\n');
    const { status, trace, stallMs } = await runV4Job(yaml, { url: proxyUrl });
    expect(status, trace).toBe('success');
    expect(trace).toContain('custom: myco_[MASKED] regex: (x|y)+[MASKED] a.*b-[MASKED] a-b-notmasked xy+notmasked');
    expect(trace).toContain('split: myco_[MASKED]\n');
    expect(trace).toContain('agent: glagent-visible');
    expect(trace).toMatch(/WARNING: token prefixes not masked [^\n]*"_gitlab_session=", "filler-prefix-number-0-"[^\n]* and 4998 more/);
    expect(stallMs, `the event loop stood still for ${Math.round(stallMs)} ms`).toBeLessThan(5_000);
  }, 120_000);
});

/** An HTTP front of `target` that hands out jobs (POST /api/v4/jobs/request, 201) changed by `edit`. */
async function rewritingProxy(target: string, edit: (job: Record<string, unknown>) => void): Promise<Server> {
  const base = new URL(target);
  const server = createServer((req, res) => {
    const upstream = request({ host: base.hostname, port: base.port, path: req.url, method: req.method, headers: req.headers }, (answer: IncomingMessage) => {
      const rewrite = req.method === 'POST' && req.url?.startsWith('/api/v4/jobs/request') && answer.statusCode === 201;
      if (!rewrite) {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
        return;
      }
      const chunks: Buffer[] = [];
      answer.on('data', (chunk: Buffer) => chunks.push(chunk));
      answer.on('end', () => {
        const job = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
        edit(job);
        const body = Buffer.from(JSON.stringify(job));
        const headers = { ...answer.headers, 'content-length': String(body.length) };
        delete headers['transfer-encoding'];
        res.writeHead(201, headers);
        res.end(body);
      });
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}
