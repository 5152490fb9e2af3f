/** Runs docker jobs of the reference server in-process (run-once), for the docker tests. */
import { logText } from '../../helpers/log-text.js';
import { runnerSchema } from '../../../src/agent/config/schema.js';
import { runOnce } from '../../helpers/run-once.js';
import { defaultServices, type SharedServices } from '../../../src/agent/services.js';
import { silentLogger } from '../../../src/log/index.js';
import { workDirs } from '../../cli/helpers.js';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onTestFinished } from 'vitest';
import { dockerOptionsOf } from '../../../src/executors/docker/defaults.js';
import { DockerExecutor } from '../../../src/executors/docker/index.js';
import { ShellExecutor } from '../../../src/executors/shell/index.js';
import { useTestServer, type TestServer } from '../../helpers/server.js';
import { IMAGES, skipDocker } from './engine.js';
import type { VariableFlags } from '../../../src/server/state/store.js';
import { shortToken } from '../../../src/util/short-token.js';

export interface DockerJobOptions {
  docker?: Record<string, unknown>;
  runner?: Record<string, unknown>;
  variables?: Record<string, string>;
  /** Flags of some of `variables` (`file: true`). */
  variableFlags?: Record<string, VariableFlags>;
  /** Reuse these dirs (a second job in the same slot). */
  dirs?: { builds: string; cache: string };
  stopJob?: AbortSignal;
  /** Replaces parts of the default wiring (e.g. an executor with other options). */
  services?: Partial<SharedServices>;
}

/** Queues `yaml` and starts its first job on a docker runner; `done` resolves with status and trace. */
export async function startDockerJob(server: TestServer, token: string, yaml: string, options: DockerJobOptions = {}) {
  const dirs = options.dirs ?? (await workDirs());
  const p = await server.pipeline(yaml, options.variables, options.variableFlags);
  const config = runnerSchema.parse({
    name: 'docker-test', url: server.url, token, executor: 'docker', builds_dir: dirs.builds, cache_dir: dirs.cache, trace_update_interval: 0.2,
    docker: { image: IMAGES.sh, pull_policy: 'if-not-present', ...options.docker },
    ...options.runner,
  });
  const never = new AbortController().signal;
  const id = p.jobs[0]!.id;
  const done = runOnce({ runner: config, services: { ...defaultServices(silentLogger()), ...options.services }, waitTimeoutMs: 20_000, pollIntervalMs: 200, stopWaiting: never, stopJob: options.stopJob ?? never }).then(
    async (result) => ({ result, status: server.server.getJob(id)?.status, trace: logText(await server.server.getTrace(id)) }),
  );
  return { id, dirs, config, done };
}

/** Queues `yaml`, runs its first job on a docker runner, returns status and trace. */
export async function runDockerJob(server: TestServer, token: string, yaml: string, options: DockerJobOptions = {}) {
  const job = await startDockerJob(server, token, yaml, options);
  return { ...job, ...(await job.done) };
}

/**
 * A reference server and a registered runner for a docker test file, started before its tests
 * (when a docker engine answers) and closed after them; `use` receives both.
 */
export function useDockerTestServer(use: (server: TestServer, runnerToken: string) => void): void {
  useTestServer(use, { skip: Boolean(skipDocker), files: { 'README.md': '# p\n' } });
}

/**
 * Services whose docker executor hands files to `owner` as it would for a runner running as that uid
 * (the tests run as root, standing in for it). git, running as root on a checkout owned by `owner`,
 * is told the checkout is safe until the test ends, as it would be for that user. Call inside a test.
 */
export async function executorForOwner(owner: { uid: number; gid: number }): Promise<Partial<SharedServices>> {
  const home = await mkdtemp(join(tmpdir(), 'ci-runner-gitconfig-'));
  await writeFile(join(home, 'gitconfig'), '[safe]\n\tdirectory = *\n');
  const previous = process.env.GIT_CONFIG_GLOBAL;
  process.env.GIT_CONFIG_GLOBAL = join(home, 'gitconfig');
  onTestFinished(() => {
    if (previous === undefined) delete process.env.GIT_CONFIG_GLOBAL;
    else process.env.GIT_CONFIG_GLOBAL = previous;
  });
  return {
    createExecutor: (runner) =>
      new DockerExecutor({ docker: dockerOptionsOf(runner), runnerToken: runner.token, killGraceMs: runner.kill_grace_period * 1000, host: new ShellExecutor({ shell: runner.shell, killGraceMs: runner.kill_grace_period * 1000 }), owner }),
  };
}

/** The project dir of the test project's job in slot 0 on the host (project 1: the test server's first). */
export function dockerProjectDir(builds: string, token: string): string {
  return join(builds, shortToken(token), 'project-1-concurrent-0', 'group', 'project');
}
