/** A runner entry's TLS files, read and checked with messages that name the entry. */
import { readTlsMaterial, type TlsFileKey, type TlsLabels, type TlsMaterial } from '../client/tls.js';
import type { RunnerConfig } from './config/schema.js';

export type RunnerTlsKeys = 'tls-ca-file' | 'tls-cert-file' | 'tls-key-file';

const KEYS: readonly TlsFileKey[] = ['tls-ca-file', 'tls-cert-file', 'tls-key-file'];

/**
 * The entry's TLS material (`TlsFileError` when a file cannot be used). Messages name each file as
 * `labels` says, else as `tls-ca-file of runner "NAME"`.
 */
export function runnerTls(runner: Pick<RunnerConfig, 'name' | RunnerTlsKeys>, labels: TlsLabels = {}): TlsMaterial {
  const named: TlsLabels = {};
  for (const key of KEYS) named[key] = labels[key] ?? `${key} of runner "${runner.name}"`;
  return readTlsMaterial(runner, named);
}
