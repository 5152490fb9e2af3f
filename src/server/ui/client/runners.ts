/** `/runners`: registered runners, their tags and last contact, with pause and resume. */
import { getJson, post, type RunnerDetail } from './api.js';
import { ago, h, replace, time } from './dom.js';
import { actionButton, loadingPage, type Page } from './page.js';

/** A runner that has not asked for work for this long is shown as offline (GitLab uses 2 h; runners poll every few seconds). */
const ONLINE_WITHIN_MS = 5 * 60 * 1000;

function state(runner: RunnerDetail): HTMLElement {
  if (!runner.active) return h('span', { class: 'badge status-paused' }, h('span', { class: 'icon', 'aria-hidden': 'true' }, '‖'), 'paused');
  const online = runner.contacted_at !== null && Date.now() - Date.parse(runner.contacted_at) < ONLINE_WITHIN_MS;
  return online
    ? h('span', { class: 'badge status-success' }, h('span', { class: 'icon', 'aria-hidden': 'true' }, '●'), 'online')
    : h('span', { class: 'badge status-created', title: `last contact ${ago(runner.contacted_at)}` }, h('span', { class: 'icon', 'aria-hidden': 'true' }, '○'), 'offline');
}

function row(runner: RunnerDetail): HTMLElement {
  const action = runner.active ? 'pause' : 'resume';
  return h(
    'tr',
    { 'data-runner': runner.id },
    h('td', { 'data-label': 'Status' }, state(runner)),
    h('td', { 'data-label': 'Runner' }, h('span', { class: 'strong' }, `#${runner.id} ${runner.description}`), h('div', { class: 'muted small' }, [runner.version && `ci-runner ${runner.version}`, runner.executor, runner.platform && `${runner.platform}/${runner.architecture ?? ''}`].filter(Boolean).join(' · '))),
    h('td', { 'data-label': 'Tags' }, runner.tags.length ? runner.tags.map((t) => h('span', { class: 'tag' }, t)) : h('span', { class: 'muted' }, 'none'), runner.run_untagged ? h('span', { class: 'muted small' }, ' + untagged') : null),
    h('td', { 'data-label': 'Scope' }, runner.project ? `${runner.project}${runner.locked ? ' (locked)' : ''}` : 'shared'),
    h('td', { 'data-label': 'Last contact' }, time(runner.contacted_at)),
    h('td', { class: 'actions' }, actionButton(runner.active ? 'Pause' : 'Resume', runner.active ? '' : 'primary', () => post(`/-/ui/api/runners/${runner.id}/${action}`), { 'data-action': action, 'aria-label': `${runner.active ? 'Pause' : 'Resume'} runner #${runner.id}` })),
  );
}

export function runnersPage(app: HTMLElement): Page {
  // Last contact moves on every poll without a recorded change; a slow redraw keeps it honest.
  const page = loadingPage(
    app,
    (signal) => getJson<RunnerDetail[]>('/-/ui/api/runners', signal),
    (runners) => {
      document.title = 'Runners · ci-runner';
      const heading = h('div', { class: 'page-head' }, h('h1', {}, 'Runners'));
      if (runners.length === 0) {
        replace(app, heading, h('div', { class: 'card empty' }, h('p', {}, 'No runners are registered.'), h('p', { class: 'muted' }, 'Register one with ', h('code', {}, `ci-runner register --url ${location.origin} --registration-token TOKEN`), '.')));
        return;
      }
      const table = h(
        'table',
        { class: 'list' },
        h('thead', {}, h('tr', {}, ...['Status', 'Runner', 'Tags', 'Scope', 'Last contact', ''].map((t) => h('th', { scope: 'col' }, t)))),
        h('tbody', {}, runners.map(row)),
      );
      replace(app, heading, h('div', { class: 'card flush' }, table));
    },
    () => clearInterval(timer),
  );
  const timer = setInterval(() => page.refresh(), 30_000);
  return page;
}
