/**
 * The TLS files a runner presents to its coordinator (GitLab Runner's `tls-ca-file`,
 * `tls-cert-file`, `tls-key-file`): read and checked once, before any connection, so a missing,
 * unreadable or malformed file is one clear error naming the file and the setting it came from —
 * never a raw ENOENT, a TLS handshake failure blamed on the URL, or a server that "closed" on us.
 * The same material then serves the API, the proxy tunnel, git and the job's CI_SERVER_TLS_CA_FILE.
 */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { rootCertificates } from 'node:tls';
import { CiRunnerError } from '../util/errors.js';

/** File paths as configured; each may be absent. */
export interface TlsFiles {
  'tls-ca-file'?: string | undefined;
  'tls-cert-file'?: string | undefined;
  'tls-key-file'?: string | undefined;
}

export type TlsFileKey = keyof TlsFiles;

/** What each file was given as, for messages (`--tls-ca-file`, `tls-ca-file of runner "x"`). */
export type TlsLabels = Partial<Record<TlsFileKey, string>>;

/** The checked PEM text of each configured file. */
export interface TlsMaterial {
  /** The private CA bundle (the file's certificates only, not the system's). */
  ca?: string;
  /** The client certificate (chain) and its key; always both or neither. */
  cert?: string;
  key?: string;
}

/** A TLS file that cannot be used. The CLI exits 2 (configuration) for it. */
export class TlsFileError extends CiRunnerError {
  readonly exitCode = 2;

  constructor(message: string, options?: { cause?: unknown }) {
    super('TLS_FILE_INVALID', message, options);
  }
}

const PEM_CERT = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/**
 * Reads and checks the configured files: each exists and is readable, the CA file and the
 * certificate file hold at least one PEM certificate that parses, the key parses (unencrypted), the
 * certificate and key come together and belong to each other. Throws `TlsFileError`.
 */
export function readTlsMaterial(files: TlsFiles, labels: TlsLabels = {}): TlsMaterial {
  const label = (key: TlsFileKey): string => labels[key] ?? key;
  const material: TlsMaterial = {};
  const caPath = files['tls-ca-file'];
  if (caPath) material.ca = readCertificates(caPath, label('tls-ca-file'), 'a CA bundle').pem;
  const certPath = files['tls-cert-file'];
  const keyPath = files['tls-key-file'];
  if (Boolean(certPath) !== Boolean(keyPath)) {
    const [given, missing] = (certPath ? ['tls-cert-file', 'tls-key-file'] : ['tls-key-file', 'tls-cert-file']) as [TlsFileKey, TlsFileKey];
    throw new TlsFileError(`${label(given)} ${files[given] ?? ''} needs ${label(missing)} too: a certificate goes with its private key`);
  }
  if (certPath && keyPath) {
    const { pem, first } = readCertificates(certPath, label('tls-cert-file'), 'a certificate');
    const keyText = readText(keyPath, label('tls-key-file'));
    let key;
    try {
      key = createPrivateKey(keyText);
    } catch (error) {
      const encrypted = /ENCRYPTED/.test(keyText);
      throw new TlsFileError(
        `${label('tls-key-file')} ${keyPath}: ${encrypted ? 'the private key is encrypted; give an unencrypted key (openssl pkey -in KEY -out PLAIN)' : `not a PEM private key (${(error as Error).message})`}`,
        { cause: error },
      );
    }
    if (!first.checkPrivateKey(key)) {
      throw new TlsFileError(`${label('tls-key-file')} ${keyPath} is not the private key of the certificate in ${label('tls-cert-file')} ${certPath}`);
    }
    material.cert = pem;
    material.key = keyText;
  }
  return material;
}

/**
 * The CAs to trust for the coordinator: the system's (Node's bundled list) plus the private CA, as
 * GitLab Runner appends its `tls-ca-file` to the system pool. A `ca` option alone would replace the
 * system list, and a coordinator or proxy with a public certificate would stop being trusted.
 */
export function trustedCas(material: TlsMaterial): string[] | undefined {
  return material.ca ? [...rootCertificates, material.ca] : undefined;
}

function readText(path: string, label: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : code === 'EISDIR' ? 'is a directory, not a file' : (error as Error).message;
    throw new TlsFileError(`${label} ${path}: cannot read it: ${why}`, { cause: error });
  }
}

function readCertificates(path: string, label: string, what: string): { pem: string; first: X509Certificate } {
  const text = readText(path, label);
  const blocks = text.match(PEM_CERT) ?? [];
  if (blocks.length === 0) throw new TlsFileError(`${label} ${path}: not ${what}: no PEM certificate (-----BEGIN CERTIFICATE-----) in it`);
  const parsed = blocks.map((block, i) => {
    try {
      return new X509Certificate(block);
    } catch (error) {
      throw new TlsFileError(`${label} ${path}: certificate #${i + 1} does not parse: ${(error as Error).message}`, { cause: error });
    }
  });
  return { pem: `${blocks.join('\n')}\n`, first: parsed[0]! };
}
