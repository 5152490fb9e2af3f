/**
 * `listen_address = "host:port"` (GitLab Runner's form): `:9252` listens on every interface,
 * `127.0.0.1:9252` on one, `[::1]:9252` on an IPv6 address; port 0 picks a free one (tests).
 */
export interface ListenAddress {
  /** Undefined: every interface. */
  host: string | undefined;
  port: number;
}

/** Parses `text`; undefined when it is not `host:port` with a port from 0 to 65535. */
export function parseListenAddress(text: string): ListenAddress | undefined {
  const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([^\s:[\]]*)):(\d{1,5})$/.exec(text.trim());
  if (!match) return undefined;
  const port = Number(match[3]);
  if (port > 65535) return undefined;
  const host = match[1] ?? match[2];
  return { host: host === '' || host === undefined ? undefined : host, port };
}

/** For logs and messages: `http://host:port`. */
export function formatListenAddress(address: { address: string; family: string; port: number }): string {
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `http://${host}:${address.port}`;
}
