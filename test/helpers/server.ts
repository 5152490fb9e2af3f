/**
 * A reference server on 127.0.0.1:0 with one real git project, for any test that needs a
 * coordinator. Runners register through the real client (E1).
 */
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll } from 'vitest';
import { RunnerApiClient } from '../../src/client/runner-api.js';
import type { TlsMaterial } from '../../src/client/tls.js';
import type { VariableFlags } from '../../src/server/state/store.js';
import {
  createReferenceServer,
  type JobView,
  type PipelineView,
  type ReferenceServer,
  type ReferenceServerOptions,
} from '../../src/server/index.js';
import { createGitRepo } from './git.js';

export interface TestServer {
  server: ReferenceServer;
  url: string;
  projectName: string;
  projectPath: string;
  /** E1 through the real client; returns the runner token. */
  registerRunner(opts?: { tags?: string[]; runUntagged?: boolean; locked?: boolean }): Promise<{ id: number; token: string }>;
  /** Queues a pipeline from YAML text on the test project. */
  pipeline(config: string, variables?: Record<string, string>, variableFlags?: Record<string, VariableFlags>): Promise<PipelineView>;
  /** Polls getJob until `predicate` holds or timeoutMs (default 30 s) passes (then throws). */
  waitForJob(id: number, predicate: (job: JobView) => boolean, timeoutMs?: number): Promise<JobView>;
  close(): Promise<void>;
}

/** Creates a temp git repo 'group/project' (one commit with `files`, default a README) and starts a server on it. */
export async function startTestServer(options: Partial<ReferenceServerOptions> & { files?: Record<string, string>; clientTls?: TlsMaterial } = {}): Promise<TestServer> {
  const { files, clientTls, ...serverOptions } = options;
  const projectName = 'group/project';
  const projectPath = await createGitRepo(files ?? { 'README.md': '# test project\n' });
  const server = await createReferenceServer({
    ...serverOptions,
    projects: [{ name: projectName, path: projectPath }, ...(serverOptions.projects ?? [])],
  });
  const client = new RunnerApiClient({ url: server.url, ...(clientTls ? { tls: clientTls } : {}) });
  return {
    server,
    url: server.url,
    projectName,
    projectPath,
    async registerRunner(opts = {}) {
      const tags = opts.tags ?? [];
      const result = await client.registerRunner({
        token: server.registrationToken,
        description: 'test runner',
        tagList: tags,
        runUntagged: opts.runUntagged ?? tags.length === 0,
        ...(opts.locked !== undefined ? { locked: opts.locked } : {}),
      });
      if (!result.runner) throw new Error(`runner registration failed with status ${result.status}`);
      return result.runner;
    },
    pipeline: (config, variables, variableFlags) => server.createPipeline({ project: projectName, config, ...(variables ? { variables } : {}), ...(variableFlags ? { variableFlags } : {}) }),
    async waitForJob(id, predicate, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const job = server.getJob(id);
        if (job && predicate(job)) return job;
        if (Date.now() > deadline) throw new Error(`job ${id} did not reach the expected state within ${timeoutMs} ms (last: ${JSON.stringify(job)})`);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    },
    async close() {
      await client.close();
      await server.close();
      await rm(projectPath, { recursive: true, force: true });
    },
  };
}

/**
 * A server and a registered runner for a whole test file: started before its tests (not at all with
 * `skip`), closed after them; `use` receives both.
 */
export function useTestServer(
  use: (server: TestServer, runnerToken: string) => void,
  options: Parameters<typeof startTestServer>[0] & { skip?: boolean } = {},
): void {
  const { skip, ...serverOptions } = options;
  let server: TestServer | undefined;
  beforeAll(async () => {
    if (skip) return;
    server = await startTestServer(serverOptions);
    use(server, (await server.registerRunner()).token);
  });
  afterAll(async () => {
    await server?.close();
  });
}
