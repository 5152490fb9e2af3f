/**
 * A private CA made in the test with Debian's `openssl`: a server certificate for 127.0.0.1,
 * localhost and `*.blob.localhost` (Azure's host names, as Azurite serves them), one for the address 127.0.0.1 only (as for a coordinator addressed by IP), a client
 * certificate, and a second, unrelated CA (for "wrong CA" cases). Nothing here
 * is trusted by the system, so every https connection in a test proves the CA was handed over.
 */
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';

export interface Pki {
  dir: string;
  caCert: string;
  serverCert: string;
  serverKey: string;
  /** A server certificate whose only name is IP:127.0.0.1 (no DNS name at all). */
  ipServerCert: string;
  ipServerKey: string;
  clientCert: string;
  clientKey: string;
  /** A CA that signed nothing here. */
  otherCaCert: string;
  /** PEM text of `path`. */
  read(path: string): Promise<string>;
}

async function openssl(dir: string, args: string[]): Promise<void> {
  await execa('openssl', args, { cwd: dir, stdin: 'ignore' });
}

async function makeCa(dir: string, name: string): Promise<void> {
  await openssl(dir, ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2', '-subj', `/CN=${name}`,
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign', '-keyout', `${name}.key`, '-out', `${name}.crt`]);
}

async function issue(dir: string, ca: string, name: string, extensions: string): Promise<void> {
  await openssl(dir, ['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-subj', `/CN=${name}`, '-keyout', `${name}.key`, '-out', `${name}.csr`]);
  await writeFile(join(dir, `${name}.ext`), extensions);
  await openssl(dir, ['x509', '-req', '-in', `${name}.csr`, '-CA', `${ca}.crt`, '-CAkey', `${ca}.key`, '-CAcreateserial', '-days', '2', '-extfile', `${name}.ext`, '-out', `${name}.crt`]);
}

/** Creates the CA and certificates in a new temp dir. */
export async function createPki(): Promise<Pki> {
  const dir = await mkdtemp(join(tmpdir(), 'ci-runner-pki-'));
  await makeCa(dir, 'test-ca');
  await makeCa(dir, 'other-ca');
  await issue(dir, 'test-ca', 'server', 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost,DNS:*.blob.localhost\n');
  await issue(dir, 'test-ca', 'ip-server', 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1\n');
  await issue(dir, 'test-ca', 'client', 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=clientAuth\n');
  const at = (file: string): string => join(dir, file);
  return {
    dir,
    caCert: at('test-ca.crt'),
    serverCert: at('server.crt'),
    serverKey: at('server.key'),
    ipServerCert: at('ip-server.crt'),
    ipServerKey: at('ip-server.key'),
    clientCert: at('client.crt'),
    clientKey: at('client.key'),
    otherCaCert: at('other-ca.crt'),
    read: (path) => readFile(path, 'utf8'),
  };
}
