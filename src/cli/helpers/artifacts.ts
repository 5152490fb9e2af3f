/**
 * `artifacts-downloader` and `artifacts-uploader`, GitLab Runner 19's helper commands
 * (commands/helpers/artifacts_*.go): the job's artifacts downloaded with its token and extracted into
 * the working directory (safely: artifacts/extract.ts), or the working directory's `--path`s archived
 * and uploaded for the job. Run by the custom executor's stage scripts where the job runs.
 */
import type { CreateFormat } from '../../artifacts/create.js';
import { downloadDependency, uploadEntry } from '../../artifacts/index.js';
import { parseDurationMs } from '../../util/duration.js';
import { fatal, helperSignal, jobClient, say, withStagingDir, type JobCredentials } from './context.js';

export interface DownloaderValues extends JobCredentials {
  retry?: number;
  'archiver-staging-dir'?: string;
}

export async function artifactsDownloader(values: DownloaderValues): Promise<void> {
  const { client, id, token } = jobClient(values);
  const signal = helperSignal();
  try {
    await withStagingDir(values['archiver-staging-dir'], (stateDir) =>
      downloadDependency({ client, projectDir: process.cwd(), stateDir, log: say, signal }, { id, token, name: `job ${id}` }, { attempts: (values.retry ?? 2) + 1 }),
    );
  } catch (error) {
    throw fatal((error as Error).message);
  } finally {
    await client.close();
  }
}

export interface UploaderValues extends JobCredentials {
  timeout?: string;
  'response-header-timeout'?: string;
  path?: string[];
  exclude?: string[];
  untracked?: boolean;
  name?: string;
  'expire-in'?: string;
  'artifact-format'?: string;
  'artifact-type'?: string;
  'archiver-staging-dir'?: string;
}

/** GitLab Runner's artifact formats that ci-runner writes (tarzstd and zipzstd it does not). */
const FORMATS: Readonly<Record<string, CreateFormat>> = { '': 'zip', zip: 'zip', gzip: 'gzip', raw: 'raw' };

export async function artifactsUploader(values: UploaderValues): Promise<void> {
  const format = FORMATS[values['artifact-format'] ?? ''];
  if (format === undefined) throw fatal(`artifact format ${JSON.stringify(values['artifact-format'])} is not supported by ci-runner (zip, gzip or raw)`);
  const timeoutMs = durationFlag(values.timeout, 'timeout');
  const headerMs = durationFlag(values['response-header-timeout'], 'response-header-timeout');
  // As GitLab Runner's uploader: the whole upload within --timeout, the answer's headers within --response-header-timeout.
  const timeouts = timeoutMs === undefined || headerMs === undefined ? {} : { timeouts: { uploadMs: timeoutMs, responseHeaderMs: headerMs } };
  const { client, id, token } = jobClient(values, headerMs);
  const signal = timeoutMs === undefined ? helperSignal() : AbortSignal.any([helperSignal(), AbortSignal.timeout(timeoutMs)]);
  const spec = {
    paths: values.path ?? [],
    ...(values.exclude?.length ? { exclude: values.exclude } : {}),
    ...(values.untracked ? { untracked: true } : {}),
    ...(values.name ? { name: values.name } : {}),
    ...(values['expire-in'] ? { expire_in: values['expire-in'] } : {}),
    ...(values['artifact-type'] ? { artifact_type: values['artifact-type'] } : {}),
    ...(values['artifact-format'] ? { artifact_format: format as 'zip' | 'gzip' | 'raw' } : {}),
  };
  try {
    await withStagingDir(values['archiver-staging-dir'], (stateDir) =>
      uploadEntry({ client, projectDir: process.cwd(), stateDir, log: say, signal, job: { id, token, variables: [], options: {} } }, { format: 'zip', jobSucceeded: true, attempts: 3, ...timeouts }, spec),
    );
  } catch (error) {
    throw fatal((error as Error).message);
  } finally {
    await client.close();
  }
}

/** A Go duration flag (`1h0m0s`) in milliseconds. */
export function durationFlag(text: string | undefined, flag: string): number | undefined {
  if (text === undefined) return undefined;
  const ms = parseDurationMs(text);
  if (ms === undefined) throw fatal(`--${flag}: ${JSON.stringify(text)} is not a duration`);
  return ms;
}
