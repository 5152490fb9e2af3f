/**
 * What a failed TLS connection to the coordinator means for the operator. Node says
 * "self-signed certificate in certificate chain" or, when a coordinator that wants a client
 * certificate hangs up, only "socket hang up" or a TLS alert; the message a user sees should name the setting
 * that fixes it.
 */
import { CiRunnerError } from '../util/errors.js';
import type { TlsMaterial } from './tls.js';

/** A transport error explained; `code` is the original's, `cause` the original error. */
export class CoordinatorTlsError extends CiRunnerError {}

const UNTRUSTED = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_UNTRUSTED',
]);
// UND_ERR_SOCKET: undici's "other side closed", what a TLS 1.3 server's refusal looks like after the handshake.
const CLOSED = new Set(['ECONNRESET', 'UND_ERR_SOCKET', 'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED', 'ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE']);

function hint(code: string, url: URL, tls: TlsMaterial): string | undefined {
  if (UNTRUSTED.has(code)) {
    return tls.ca
      ? `the certificate of ${url.host} is not signed by the CA in tls-ca-file (nor by a system CA)`
      : `the certificate of ${url.host} comes from a CA this runner does not trust; give that CA with tls-ca-file (--tls-ca-file)`;
  }
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') return `the certificate of ${url.host} is not issued for the host name ${url.hostname}`;
  if (code === 'CERT_HAS_EXPIRED') return `the certificate of ${url.host} has expired`;
  if (CLOSED.has(code) && !tls.cert) {
    // Not certain (any dropped connection looks the same), so said as a condition.
    return `if ${url.host} requires a client certificate, give one with tls-cert-file and tls-key-file (--tls-cert-file, --tls-key-file)`;
  }
  return undefined;
}

/** `error` with a hint added when it is a TLS problem at an https coordinator; otherwise `error` itself. */
export function explainTransportError(error: Error, url: URL, tls: TlsMaterial): Error {
  if (url.protocol !== 'https:' || error instanceof CoordinatorTlsError) return error;
  const code = String((error as { code?: unknown }).code ?? '');
  const text = hint(code, url, tls);
  return text ? new CoordinatorTlsError(code, `${error.message} (${text})`, { cause: error }) : error;
}
