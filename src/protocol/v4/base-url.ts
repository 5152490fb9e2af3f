/**
 * The v4 API base from a runner's configured `url` (docs/protocol-v4.md §8.1): strip trailing
 * slashes and then one trailing `/ci` (so a URL written for v1 keeps working), append `/api/v4/`.
 * `https://h/`, `https://h/ci` → `https://h/api/v4/`; `https://h/gitlab` → `https://h/gitlab/api/v4/`.
 * Only http and https are accepted.
 */
import { coordinatorUrl } from '../base-url.js';

export function apiV4BaseUrl(url: string): URL {
  const parsed = coordinatorUrl(url);
  const path = parsed.pathname.replace(/\/+$/, '').replace(/\/ci$/, '');
  parsed.pathname = `${path}/api/v4/`;
  parsed.search = '';
  parsed.hash = '';
  return parsed;
}
