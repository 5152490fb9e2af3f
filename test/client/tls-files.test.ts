/** TLS files that cannot be used are refused up front with the file and the setting named. */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { rootCertificates } from 'node:tls';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readTlsMaterial, TlsFileError, trustedCas } from '../../src/client/tls.js';
import { createPki, type Pki } from '../helpers/pki.js';

let pki: Pki;
const at = (name: string): string => join(pki.dir, name);

beforeAll(async () => {
  pki = await createPki();
  await writeFile(at('garbage.pem'), 'not a certificate\n');
  const real = await pki.read(pki.caCert);
  await writeFile(at('broken.pem'), real.replace(/\n[A-Za-z0-9+/]{20}/, '\n!!!!'));
  await mkdir(at('a-dir'));
  await execa('openssl', ['pkey', '-in', pki.clientKey, '-aes256', '-passout', 'pass:secret', '-out', at('encrypted.key')]);
});
afterAll(async () => {
  await rm(pki.dir, { recursive: true, force: true });
});

function refusal(run: () => unknown): TlsFileError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(TlsFileError);
    expect((error as TlsFileError).code).toBe('TLS_FILE_INVALID');
    expect((error as TlsFileError).exitCode).toBe(2);
    return error as TlsFileError;
  }
  throw new Error('expected a TlsFileError');
}

describe('readTlsMaterial', () => {
  it('reads a CA, a client certificate and its key', () => {
    const material = readTlsMaterial({ 'tls-ca-file': pki.caCert, 'tls-cert-file': pki.clientCert, 'tls-key-file': pki.clientKey });
    expect(material.ca).toContain('BEGIN CERTIFICATE');
    expect(material.cert).toContain('BEGIN CERTIFICATE');
    expect(material.key).toContain('PRIVATE KEY');
  });

  it('names a missing file and the flag it came from', () => {
    const error = refusal(() => readTlsMaterial({ 'tls-ca-file': at('nope.pem') }, { 'tls-ca-file': '--tls-ca-file' }));
    expect(error.message).toBe(`--tls-ca-file ${at('nope.pem')}: cannot read it: no such file`);
  });

  it('refuses a directory, a file with no certificate and a certificate that does not parse', () => {
    expect(refusal(() => readTlsMaterial({ 'tls-ca-file': at('a-dir') })).message).toMatch(/^tls-ca-file .*a-dir: cannot read it: is a directory/);
    expect(refusal(() => readTlsMaterial({ 'tls-ca-file': at('garbage.pem') })).message).toMatch(/garbage\.pem: not a CA bundle: no PEM certificate/);
    expect(refusal(() => readTlsMaterial({ 'tls-ca-file': at('broken.pem') })).message).toMatch(/broken\.pem: certificate #1 does not parse/);
  });

  it('wants a certificate and its key together, and the key must be the certificate\'s', () => {
    expect(refusal(() => readTlsMaterial({ 'tls-cert-file': pki.clientCert })).message).toMatch(/^tls-cert-file .* needs tls-key-file too/);
    expect(refusal(() => readTlsMaterial({ 'tls-key-file': pki.clientKey })).message).toMatch(/^tls-key-file .* needs tls-cert-file too/);
    expect(refusal(() => readTlsMaterial({ 'tls-cert-file': pki.clientCert, 'tls-key-file': pki.serverKey })).message).toMatch(/server\.key is not the private key of the certificate in tls-cert-file .*client\.crt/);
  });

  it('says an encrypted key must be decrypted, and refuses a key file that holds no key', () => {
    expect(refusal(() => readTlsMaterial({ 'tls-cert-file': pki.clientCert, 'tls-key-file': at('encrypted.key') })).message).toMatch(/encrypted\.key: the private key is encrypted/);
    expect(refusal(() => readTlsMaterial({ 'tls-cert-file': pki.clientCert, 'tls-key-file': at('garbage.pem') })).message).toMatch(/garbage\.pem: not a PEM private key/);
  });

  it('adds the private CA to the system CAs instead of replacing them', () => {
    const cas = trustedCas(readTlsMaterial({ 'tls-ca-file': pki.caCert }));
    expect(cas?.length).toBe(rootCertificates.length + 1);
    expect(trustedCas({})).toBeUndefined();
  });
});
