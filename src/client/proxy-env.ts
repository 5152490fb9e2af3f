/**
 * Which proxy, if any, a request to the coordinator goes through, from the environment the way Go's
 * net/http (GitLab Runner) and curl (git) read it: `HTTP_PROXY` for http URLs, `HTTPS_PROXY` for https
 * URLs (no fallback from one to the other, so the API and git agree), upper case before lower case
 * (the first one set wins), and `NO_PROXY` with CIDR ranges. This is only the choice of undici
 * dispatcher (transport.ts). undici's own `EnvHttpProxyAgent` reads lower case first, falls back
 * from https to `HTTP_PROXY`, lets `.example.com` match `example.com` too and knows no CIDR ranges:
 * it would disagree with git and with GitLab Runner.
 */
import { BlockList, isIP } from 'node:net';
import { CiRunnerError } from '../util/errors.js';

/** The proxy for `url`, or undefined to connect directly. A proxy given without a scheme is http. */
export function proxyFor(url: URL, env: NodeJS.ProcessEnv = process.env): URL | undefined {
  const raw = url.protocol === 'https:' ? env.HTTPS_PROXY || env.https_proxy : env.HTTP_PROXY || env.http_proxy;
  if (!raw) return undefined;
  if (bypassed(url, env.NO_PROXY || env.no_proxy || '')) return undefined;
  return parseProxyUrl(raw);
}

/** A proxy URL as written in the environment; `host:port` alone means http. */
export function parseProxyUrl(raw: string): URL {
  const text = /^[a-z][a-z0-9+.-]*:\/\//i.test(raw) ? raw : `http://${raw}`;
  let proxy: URL;
  try {
    proxy = new URL(text);
  } catch {
    throw new CiRunnerError('PROXY_URL_INVALID', `the proxy URL ${JSON.stringify(raw)} is not a URL; fix HTTPS_PROXY/HTTP_PROXY`);
  }
  if (proxy.protocol !== 'http:' && proxy.protocol !== 'https:') {
    throw new CiRunnerError('PROXY_URL_INVALID', `the proxy URL ${JSON.stringify(raw)} is not http or https (${proxy.protocol.slice(0, -1)} proxies are not supported)`);
  }
  return proxy;
}

/**
 * `Proxy-Authorization` for a proxy URL with a user (and password), else undefined. As in Go, a
 * user without a password is sent too (undici's own reading wants both).
 */
export function proxyAuthorization(proxy: URL): string | undefined {
  if (!proxy.username && !proxy.password) return undefined;
  const pair = `${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`;
  return `Basic ${Buffer.from(pair).toString('base64')}`;
}

function portOf(url: URL): number {
  return url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
}

/** A URL's host name without the brackets of an IPv6 literal. */
function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1');
}

/**
 * Whether `NO_PROXY` exempts `url`. Entries are separated by commas or spaces: `*` exempts everything;
 * `example.com` the host and its subdomains, `.example.com` (or `*.example.com`) only subdomains; an IP
 * address or a CIDR range (`10.0.0.0/8`) the addresses in it; `:port` after any entry narrows it to
 * that port.
 */
export function bypassed(url: URL, noProxy: string): boolean {
  const host = hostOf(url).toLowerCase();
  const port = portOf(url);
  for (const raw of noProxy.split(/[\s,]+/)) {
    const entry = raw.trim().toLowerCase();
    if (entry === '') continue;
    if (entry === '*') return true;
    const { name, entryPort } = splitPort(entry);
    if (entryPort !== undefined && entryPort !== port) continue;
    if (matches(host, name)) return true;
  }
  return false;
}

function splitPort(entry: string): { name: string; entryPort?: number } {
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry);
  if (bracketed) return { name: bracketed[1]!, ...(bracketed[2] ? { entryPort: Number(bracketed[2]) } : {}) };
  // An IPv6 address or range without brackets has no port.
  if ((entry.match(/:/g) ?? []).length > 1) return { name: entry };
  const at = entry.lastIndexOf(':');
  if (at > 0 && /^\d+$/.test(entry.slice(at + 1))) return { name: entry.slice(0, at), entryPort: Number(entry.slice(at + 1)) };
  return { name: entry };
}

function matches(host: string, name: string): boolean {
  const family = isIP(host);
  if (name.includes('/')) {
    const [base, bits] = name.split('/');
    const type = isIP(base ?? '');
    if (family === 0 || type !== family || !/^\d+$/.test(bits ?? '')) return false;
    const list = new BlockList();
    try {
      list.addSubnet(base!, Number(bits), family === 6 ? 'ipv6' : 'ipv4');
    } catch {
      return false;
    }
    return list.check(host, family === 6 ? 'ipv6' : 'ipv4');
  }
  if (isIP(name) !== 0 || family !== 0) return host === name;
  const suffix = name.replace(/^\*?\./, '.');
  if (suffix.startsWith('.')) return host.endsWith(suffix);
  return host === name || host.endsWith(`.${name}`);
}
