/**
 * The two HTML documents: the sign-in form (all a browser without the admin token ever sees) and
 * the app shell that the browser modules fill in. Both are strict about what may run: scripts from
 * this server only (plus the import map, allowed by its hash), no framing.
 */
import { createHash } from 'node:crypto';
import type { Reply } from '../http/reply.js';

const IMPORT_MAP = JSON.stringify({ imports: { ansi_up: '/-/ui/vendor/ansi_up.js' } });
const IMPORT_MAP_HASH = createHash('sha256').update(IMPORT_MAP).digest('base64');

const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy': [
    "default-src 'self'",
    `script-src 'self' 'sha256-${IMPORT_MAP_HASH}'`,
    // ansi_up writes 256-colour and true-colour spans with style attributes.
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "form-action 'self'",
  ].join('; '),
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'same-origin',
  'cache-control': 'no-store',
};

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function documentReply(status: number, title: string, head: string, body: string, headers: Record<string, string> = {}): Reply {
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<link rel="icon" href="/-/ui/assets/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/-/ui/assets/style.css">
${head}
</head>
<body>
${body}
</body>
</html>
`;
  return { status, headers: { 'content-type': 'text/html; charset=utf-8', ...SECURITY_HEADERS, ...headers }, body: html };
}

/** Only paths of this site, so a crafted `next` cannot send a signed-in browser elsewhere. */
export function safeNext(next: string | undefined): string {
  return next !== undefined && /^\/(?![/\\])[^\s]*$/.test(next) && !next.startsWith('/-/') ? next : '/';
}

/** The sign-in form; `error` is shown above it after a wrong token. */
export function signInPage(status: number, next: string, error?: string): Reply {
  const body = `<main class="sign-in">
<form method="post" action="/-/ui/sign-in" class="card">
<h1><img src="/-/ui/assets/favicon.svg" alt="" width="28" height="28"> ci-runner</h1>
<p>Sign in with the server's admin token (printed by <code>ci-runner serve</code> at start).</p>
${error ? `<p class="error" role="alert">${escapeHtml(error)}</p>` : ''}
<input type="text" name="username" value="admin" autocomplete="username" hidden>
<label for="token">Admin token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
<input type="hidden" name="next" value="${escapeHtml(safeNext(next))}">
<button type="submit" class="primary">Sign in</button>
</form>
</main>`;
  return documentReply(status, 'Sign in · ci-runner', '', body);
}

/** The signed-in shell; the browser modules render into `#app`. */
export function appPage(csrf: string): Reply {
  const head = `<meta name="csrf-token" content="${escapeHtml(csrf)}">
<script type="importmap">${IMPORT_MAP}</script>
<script type="module" src="/-/ui/assets/main.js"></script>`;
  const body = `<header class="top">
<a class="brand" href="/"><img src="/-/ui/assets/favicon.svg" alt="" width="22" height="22"> ci-runner</a>
<nav aria-label="Main">
<a href="/" data-nav="pipelines">Pipelines</a>
<a href="/runners" data-nav="runners">Runners</a>
<a href="/pipelines/new" data-nav="new" class="button primary small">Run pipeline</a>
</nav>
<button type="button" id="sign-out" class="link">Sign out</button>
</header>
<main id="app" aria-live="polite"><p class="muted">Loading…</p></main>`;
  return documentReply(200, 'ci-runner', head, body);
}
