/**
 * The transports cache transfers go through: one per private CA (the runner's `tls-ca-file`, trusted
 * beside the system's, as for the coordinator), made on first use and kept, so keep-alive connections
 * to a store are shared by every job. The runner's client certificate is for its coordinator and is
 * not offered to a store. Proxies come from the environment as for every other connection.
 */
import { Transport } from '../client/transport.js';
import { USER_AGENT } from '../client/info.js';

const transports = new Map<string, Transport>();

/** The transport for stores trusted with `ca` (PEM) beside the system's CAs. */
export function cacheTransport(ca?: string): Transport {
  const key = ca ?? '';
  let transport = transports.get(key);
  if (!transport) {
    transport = new Transport({ ...(ca ? { tls: { ca } } : {}), userAgent: USER_AGENT });
    transports.set(key, transport);
  }
  return transport;
}
