/**
 * The page's entry: a router over real paths (links work, the back button works, a reload lands on
 * the same page) and one event stream of state changes that tells the current page to refresh.
 */
import { post } from './api.js';
import { h, replace, tickDurations } from './dom.js';
import { jobPage } from './job.js';
import { newPipelinePage } from './new-pipeline.js';
import { pipelinePage } from './pipeline.js';
import { pipelinesPage } from './pipelines.js';
import { runnersPage } from './runners.js';
import { nav, type Page } from './page.js';

const app = document.getElementById('app') as HTMLElement;
let current: Page | undefined;

function route(path: string): { page: (app: HTMLElement, id: number) => Page; id: number; nav: string } | undefined {
  if (path === '/') return { page: pipelinesPage, id: 0, nav: 'pipelines' };
  if (path === '/runners') return { page: runnersPage, id: 0, nav: 'runners' };
  if (path === '/pipelines/new') return { page: newPipelinePage, id: 0, nav: 'new' };
  const match = /^\/(pipelines|jobs)\/(\d+)$/.exec(path);
  if (match) return { page: match[1] === 'jobs' ? jobPage : pipelinePage, id: Number(match[2]), nav: 'pipelines' };
  return undefined;
}

/** `path` may carry a query (the pipelines' pager); pages read it from `location`. */
function show(path: string): void {
  current?.dispose();
  current = undefined;
  const found = route(path.split('?')[0] ?? path);
  for (const link of document.querySelectorAll<HTMLAnchorElement>('[data-nav]')) {
    if (found?.nav === link.dataset.nav) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  if (!found) {
    replace(app, h('h1', {}, 'Not found'), h('p', {}, h('a', { href: '/' }, 'Back to the pipelines')));
    return;
  }
  current = found.page(app, found.id);
  window.scrollTo(0, 0);
}

/** Goes to `path` inside the page (no reload). */
function navigate(path: string): void {
  history.pushState(null, '', path);
  show(path);
}

document.addEventListener('click', (event) => {
  const link = (event.target as Element).closest('a');
  if (!link || event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  if (link.origin !== location.origin || link.hasAttribute('download') || link.target !== '' || link.pathname.startsWith('/-/')) return;
  event.preventDefault();
  navigate(link.pathname + link.search);
});
window.addEventListener('popstate', () => show(location.pathname + location.search));
nav.go = navigate;

document.getElementById('sign-out')?.addEventListener('click', () => {
  void post('/-/ui/api/sign-out').finally(() => location.assign('/'));
});

// One stream for the whole tab; EventSource reconnects by itself after a network error.
const changes = new EventSource('/-/ui/api/events');
changes.addEventListener('change', () => current?.refresh());
// After a reconnect, whatever happened meanwhile is picked up by one refresh.
changes.addEventListener('hello', () => current?.refresh());

setInterval(tickDurations, 1000);

show(location.pathname);
