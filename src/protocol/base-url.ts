/**
 * Builds the API base from a runner's configured `url` (docs/protocol-v1.md §2.1): strip trailing slashes,
 * append `/ci` unless present, then `/api/v1/`. Only http and https are accepted.
 */
export function apiBaseUrl(url: string): URL {
  const parsed = coordinatorUrl(url);
  let path = parsed.pathname.replace(/\/+$/, '');
  if (!path.endsWith('/ci')) path += '/ci';
  parsed.pathname = `${path}/api/v1/`;
  parsed.search = '';
  parsed.hash = '';
  return parsed;
}

/** A runner's configured `url`, parsed; only http and https are accepted (TypeError otherwise). */
export function coordinatorUrl(url: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new TypeError(`invalid coordinator URL ${JSON.stringify(url)}: expected http(s)://host[:port][/path]`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new TypeError(`invalid coordinator URL ${JSON.stringify(url)}: only http and https are supported`);
  }
  return parsed;
}
