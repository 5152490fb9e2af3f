/** `ci-runner serve` as a real process: starts, prints its block, queues --pipeline, stops on SIGTERM. */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { afterEach, describe, expect, it } from 'vitest';
import { createGitRepo } from '../helpers/git.js';
import { raw } from './raw-http.js';
import { readyBlock } from './serve-process.js';

const MAIN = join(import.meta.dirname, '../../src/cli/main.ts');
const cleanup: string[] = [];
afterEach(async () => {
  for (const dir of cleanup.splice(0)) await rm(dir, { recursive: true, force: true });
});

function serve(args: string[]): ResultPromise<{ reject: false; all: true }> {
  return execa('node', ['--import', 'tsx', MAIN, 'serve', ...args], { reject: false, all: true, env: { NO_COLOR: '1' } });
}

describe('ci-runner serve', () => {
  it('prints URL, tokens and projects, serves the admin API, queues --pipeline and exits on SIGTERM', async () => {
    const repo = await createGitRepo({ 'README.md': 'hi\n' });
    const dataDir = await mkdtemp(join(tmpdir(), 'ci-runner-serve-data-'));
    const pipelineFile = join(dataDir, 'ci.yml');
    await writeFile(pipelineFile, 'build:\n  script: [make]\n');
    cleanup.push(repo, dataDir);
    const child = serve([
      '--port', '0',
      '--registration-token', 'REGTOKEN1234567890ab',
      '--admin-token', 'ADMINTOKEN1234567890',
      '--project', `acme/app=${repo}`,
      '--pipeline', pipelineFile,
      '--data-dir', join(dataDir, 'data'),
      '--long-poll', '1s',
      '--max-artifacts-size', '10MB',
      '--fault', 'patch_trace:apply_then_error:10%',
    ]);
    const block = await readyBlock(child);
    const url = /URL:\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(block)?.[1];
    expect(url).toBeDefined();
    expect(block).toContain(`Web page:           ${url}/ `);
    expect(block).toContain('Registration token: REGTOKEN1234567890ab');
    expect(block).toContain('Admin token:        ADMINTOKEN1234567890');
    expect(block).toContain(`acme/app  ${url}/acme/app.git`);
    expect(block).toMatch(/Pipeline:\s+#1 queued with 1 job\(s\): build/);
    const jobs = await raw(url!, 'GET', '/admin/api/jobs', { headers: { 'private-token': 'ADMINTOKEN1234567890' } });
    expect(JSON.parse(jobs.text)).toMatchObject([{ name: 'build', status: 'pending' }]);
    child.kill('SIGTERM');
    const result = await child;
    expect(result.exitCode).toBe(143);
    // Requests are logged, one runner-format line each (standard error is not a terminal here).
    expect(result.all).toMatch(/^request +component=http method=GET ms=\d+ status=200 url=\/admin\/api\/jobs$/m);
  });

  it('refuses bad flags with exit code 2 and a message saying what to do', async () => {
    const badProject = await serve(['--port', '0', '--project', 'nopath']);
    expect(badProject.exitCode).toBe(2);
    expect(badProject.all).toContain('must be NAME=PATH');
    const badFault = await serve(['--port', '0', '--fault', 'everything:explode']);
    expect(badFault.exitCode).toBe(2);
    expect(badFault.all).toContain('unknown fault endpoint');
  });

  it('documents --fault in --help', async () => {
    const help = await serve(['--help']);
    expect(help.exitCode).toBe(0);
    expect(help.all).toContain('ENDPOINT:ACTION[:OPTION][:OPTION]');
    expect(help.all).toContain('apply_then_error');
  });
});
