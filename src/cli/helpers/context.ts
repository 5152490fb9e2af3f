/**
 * What the four helper commands share: lines as GitLab Runner's helpers print them (a level word
 * first), a fatal error (exit 1, as logrus' Fatal), the signal that SIGTERM and SIGINT abort, a
 * staging dir of their own, and the coordinator client of the job's credentials.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunnerApi } from '../../client/api.js';
import { createRunnerApi } from '../../client/connect.js';
import { readTlsMaterial } from '../../client/tls.js';
import { CommandError, EXIT } from '../support.js';

export const say = (line: string): void => {
  process.stdout.write(`${line}\n`);
};
export const warn = (line: string): void => {
  process.stderr.write(`\x1b[0;33mWARNING: ${line}\x1b[0;m\n`);
};

/** A helper's failure: `FATAL: <message>` and exit 1, as GitLab Runner's helpers end. */
export function fatal(message: string): CommandError {
  return new CommandError(EXIT.jobFailed, message, 'HELPER_FAILED');
}

/** Aborted by SIGTERM or SIGINT (the driver's stop reaches the helper through its process group). */
export function helperSignal(): AbortSignal {
  const controller = new AbortController();
  const stop = (name: string) => () => controller.abort(fatal(`stopped by ${name}`));
  process.once('SIGTERM', stop('SIGTERM'));
  process.once('SIGINT', stop('SIGINT'));
  return controller.signal;
}

/** A staging dir for `work`, removed afterwards. */
export async function withStagingDir<T>(parent: string | undefined, work: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(parent ?? tmpdir(), 'ci-runner-helper-'));
  try {
    return await work(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export interface JobCredentials {
  url?: string;
  token?: string;
  id?: number;
  'tls-ca-file'?: string;
  'tls-cert-file'?: string;
  'tls-key-file'?: string;
}

/**
 * The client for the job's coordinator (v4 or v1, asked on the first call); the credentials must be
 * complete. `responseHeaderTimeoutMs` bounds every answer's headers, the API probe's too.
 */
export function jobClient(values: JobCredentials, responseHeaderTimeoutMs?: number): { client: RunnerApi; id: number; token: string } {
  if (!values.url) warn('Missing URL (--url)');
  if (!values.token) warn('Missing runner credentials (--token)');
  if (values.id === undefined || values.id <= 0) warn('Missing build ID (--id)');
  if (!values.url || !values.token || values.id === undefined || values.id <= 0) throw fatal('Incomplete arguments');
  let tls;
  try {
    tls = readTlsMaterial({
      ...(values['tls-ca-file'] ? { 'tls-ca-file': values['tls-ca-file'] } : {}),
      ...(values['tls-cert-file'] ? { 'tls-cert-file': values['tls-cert-file'] } : {}),
      ...(values['tls-key-file'] ? { 'tls-key-file': values['tls-key-file'] } : {}),
    });
  } catch (error) {
    throw fatal((error as Error).message);
  }
  return { client: createRunnerApi({ url: values.url, tls, ...(responseHeaderTimeoutMs === undefined ? {} : { requestTimeoutMs: responseHeaderTimeoutMs }) }), id: values.id, token: values.token };
}
