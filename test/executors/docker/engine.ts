/**
 * What the docker tests need from the machine: an engine that answers and the test images, built
 * locally by .ci/docker-test-images.sh (no registry). When no engine answers the docker tests skip,
 * saying why; CI (.ci/run) starts one.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { runnerLabel } from '../../../src/executors/docker/labels.js';

const run = promisify(execFile);

export const IMAGES = {
  sh: 'ci-runner-test/sh:1',
  bash: 'ci-runner-test/bash:1',
  httpd: 'ci-runner-test/httpd:1',
  nolisten: 'ci-runner-test/nolisten:1',
  /** `USER 1000:1000`. */
  user: 'ci-runner-test/user:1',
  /** ENTRYPOINT a wrapper ending in `exec "$@"`. */
  entry: 'ci-runner-test/entry:1',
  /** `USER 1000`, ENTRYPOINT `/bin/echo`. */
  binentry: 'ci-runner-test/binentry:1',
} as const;

/** Undefined when the engine answers and the images exist; else why the docker tests skip. */
export async function dockerUnavailable(): Promise<string | undefined> {
  try {
    await run('docker', ['version', '--format', '{{.Server.Version}}'], { timeout: 20_000 });
  } catch (error) {
    return `no docker engine answers (${(error as Error).message.split('\n')[0]}); .ci/run starts one`;
  }
  const script = fileURLToPath(new URL('../../../.ci/docker-test-images.sh', import.meta.url));
  try {
    await run(script, [], { timeout: 120_000 });
  } catch (error) {
    return `the test images could not be built: ${(error as Error).message}`;
  }
  return undefined;
}

/** `docker …args` stdout, trimmed. */
export async function docker(args: string[]): Promise<string> {
  return (await run('docker', args, { maxBuffer: 64 * 1024 * 1024 })).stdout.trim();
}

/** Names of containers (any state) and networks carrying every one of `labels`. */
export async function labelled(...labels: string[]): Promise<{ containers: string[]; networks: string[] }> {
  const filters = labels.flatMap((label) => ['--filter', `label=${label}`]);
  const containers = (await docker(['ps', '-a', ...filters, '--format', '{{.Names}}'])).split('\n').filter(Boolean);
  const networks = (await docker(['network', 'ls', ...filters, '--format', '{{.Name}}'])).split('\n').filter(Boolean);
  return { containers, networks };
}

/** The labels of one job of one runner (job ids repeat across the test servers running in parallel). */
export function jobLabels(runnerToken: string, jobId: number): string[] {
  return [`com.ci-runner.runner=${runnerLabel(runnerToken)}`, `com.ci-runner.job=${jobId}`];
}

const reason = await dockerUnavailable();
if (reason) console.log(`docker tests skipped: ${reason}`);
/** Set when the docker tests must skip. */
export const skipDocker = reason;
