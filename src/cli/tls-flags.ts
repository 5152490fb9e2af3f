/**
 * The `--tls-ca-file`, `--tls-cert-file` and `--tls-key-file` flags of every command that talks to a
 * coordinator, with GitLab Runner's environment names. One table, so the commands cannot drift apart;
 * the values mean what the config.toml keys of the same names mean.
 */
import { resolve } from 'node:path';
import type { Argv } from 'yargs';
import { readTlsMaterial, TlsFileError, type TlsFileKey, type TlsFiles, type TlsLabels, type TlsMaterial } from '../client/tls.js';
import { CommandError, EXIT } from './support.js';

const FLAGS: ReadonlyArray<{ key: TlsFileKey; env: string; describe: string }> = [
  { key: 'tls-ca-file', env: 'CI_SERVER_TLS_CA_FILE', describe: 'PEM CA bundle trusted for an https coordinator, on top of the system CAs' },
  { key: 'tls-cert-file', env: 'CI_SERVER_TLS_CERT_FILE', describe: 'PEM client certificate for a coordinator that asks for one (with --tls-key-file)' },
  { key: 'tls-key-file', env: 'CI_SERVER_TLS_KEY_FILE', describe: 'PEM private key of --tls-cert-file (unencrypted)' },
];

/** What the user gave: the files, and for each the flag or environment name it came from. */
export interface TlsFlagValues {
  files: TlsFiles;
  labels: TlsLabels;
}

/**
 * Adds the three flags, in a "TLS" group. `env: false` for commands that read the files from
 * config.toml entries: there a stray CI_SERVER_TLS_* (set in every GitLab CI job) must not replace
 * an entry's own file, so only an explicit flag does.
 */
export function addTlsFlags<T>(y: Argv<T>, options: { note?: string; env?: boolean | string } = {}): Argv<T> {
  let out = y;
  const envNote = (name: string): string => (options.env === false ? '' : ` [env: ${name}${typeof options.env === 'string' ? options.env : ''}]`);
  for (const f of FLAGS) out = out.option(f.key, { type: 'string', describe: `${f.describe}${options.note ?? ''}${envNote(f.env)}`, group: 'TLS:' });
  return out;
}

/** The files named by the flags, else by their environment names; relative paths resolved now. */
export function tlsFromFlags(argv: Partial<Record<TlsFileKey, unknown>>, env: NodeJS.ProcessEnv = process.env): TlsFlagValues {
  const files: TlsFiles = {};
  const labels: TlsLabels = {};
  for (const f of FLAGS) {
    const flag = argv[f.key];
    const value = typeof flag === 'string' && flag !== '' ? flag : env[f.env] || undefined;
    if (value === undefined) continue;
    files[f.key] = resolve(value);
    labels[f.key] = typeof flag === 'string' && flag !== '' ? `--${f.key}` : f.env;
  }
  return { files, labels };
}

/** Reads and checks the files before anything is sent: an unusable one is exit 2 naming it. */
export function checkTlsFlags(values: TlsFlagValues): TlsMaterial {
  // A file that was not given is named by its flag ("needs --tls-key-file too").
  const labels: TlsLabels = Object.fromEntries(FLAGS.map((f) => [f.key, values.labels[f.key] ?? `--${f.key}`]));
  try {
    return readTlsMaterial(values.files, labels);
  } catch (error) {
    if (error instanceof TlsFileError) throw new CommandError(EXIT.usage, error.message, error.code);
    throw error;
  }
}

/** True when any of the three was given. */
export function hasTlsFiles(values: TlsFlagValues): boolean {
  return Object.keys(values.files).length > 0;
}

/**
 * A configured entry's TLS material with the flags on top: a file given on the command line replaces
 * the entry's file of the same key. Exit 2 naming the file when one cannot be used.
 */
export function entryTls(entry: { name: string } & TlsFiles, flags: TlsFlagValues): TlsMaterial {
  const files: TlsFiles = {};
  const labels: TlsLabels = {};
  for (const f of FLAGS) {
    const fromFlag = flags.files[f.key];
    const value = fromFlag ?? entry[f.key];
    if (value === undefined) continue;
    files[f.key] = value;
    labels[f.key] = fromFlag !== undefined ? (flags.labels[f.key] ?? `--${f.key}`) : `${f.key} of runner "${entry.name}"`;
  }
  return checkTlsFlags({ files, labels });
}
