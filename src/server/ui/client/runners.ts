/**
 * `/runners`: the runners with their tags, version, API and hosts; pause, resume, delete; and "New
 * runner", which creates one on the server and shows its `glrt-` token this once, with the commands
 * that register a host with it. The list redraws on changes; the form and the token stay put.
 */
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

/** `gitlab-runner 14.7.1 · shell · linux/amd64 · API v4 · 2 hosts`, as far as known. */
function about(runner: RunnerDetail): string {
  const program = runner.version ? `${runner.name ?? 'runner'} ${runner.version}` : null;
  const hosts = runner.managers.length > 1 ? `${runner.managers.length} hosts` : null;
  return [program, runner.executor, runner.platform && `${runner.platform}/${runner.architecture ?? ''}`, runner.api && `API ${runner.api}`, hosts].filter(Boolean).join(' · ');
}

function row(runner: RunnerDetail, refresh: () => void): HTMLElement {
  const action = runner.active ? 'pause' : 'resume';
  const remove = actionButton('Delete', '', async () => {
    if (!confirm(`Delete runner #${runner.id} ${runner.description}? Its token stops working and the jobs it runs fail.`)) return;
    await post(`/-/ui/api/runners/${runner.id}/delete`);
    refresh();
  }, { 'data-action': 'delete', 'aria-label': `Delete runner #${runner.id}` });
  return h(
    'tr',
    { 'data-runner': runner.id },
    h('td', { 'data-label': 'Status' }, state(runner)),
    h(
      'td',
      { 'data-label': 'Runner' },
      h('span', { class: 'strong' }, `#${runner.id} ${runner.description}`),
      runner.registration === 'created' ? h('span', { class: 'tag', title: 'created on this server: a glrt- token' }, 'glrt') : null,
      h('div', { class: 'muted small' }, about(runner)),
    ),
    h('td', { 'data-label': 'Tags' }, runner.tags.length ? runner.tags.map((t) => h('span', { class: 'tag' }, t)) : h('span', { class: 'muted' }, 'none'), runner.run_untagged ? h('span', { class: 'muted small' }, ' + untagged') : null),
    h('td', { 'data-label': 'Scope' }, runner.project ? `${runner.project}${runner.locked ? ' (locked)' : ''}` : 'shared', runner.access_level === 'ref_protected' ? h('div', { class: 'muted small' }, 'protected refs only') : null),
    h('td', { 'data-label': 'Last contact' }, time(runner.contacted_at)),
    h(
      'td',
      { class: 'actions' },
      actionButton(runner.active ? 'Pause' : 'Resume', runner.active ? '' : 'primary', () => post(`/-/ui/api/runners/${runner.id}/${action}`), { 'data-action': action, 'aria-label': `${runner.active ? 'Pause' : 'Resume'} runner #${runner.id}` }),
      remove,
    ),
  );
}

/** The one moment a token is shown: with the commands that register a host with it. */
function tokenCard(runner: RunnerDetail, token: string, done: () => void): HTMLElement {
  const copy = h('button', { type: 'button', class: 'small', 'data-action': 'copy' }, 'Copy');
  copy.addEventListener('click', () => {
    void navigator.clipboard?.writeText(token).then(() => {
      copy.textContent = 'Copied';
    });
  });
  const command = (program: string) => h('pre', { class: 'command' }, `${program} register --url ${location.origin} --token ${token}`);
  return h(
    'div',
    { class: 'card token-card', role: 'status', 'data-runner-created': runner.id },
    h('p', {}, h('span', { class: 'strong' }, `Runner #${runner.id} ${runner.description} is created.`), ' Its token is shown only now: copy it before you leave this page.'),
    h('p', { class: 'token-line' }, h('code', { 'data-token': '' }, token), ' ', copy),
    h('p', { class: 'muted small' }, 'Register a host with it (ci-runner, or GitLab Runner 15.10 or later); tags, scope and limits are set here, not there:'),
    command('ci-runner'),
    command('gitlab-runner'),
    h('button', { type: 'button', class: 'primary', 'data-action': 'done', onclick: done }, 'Done'),
  );
}

function newRunnerForm(projects: Array<{ name: string }>, created: (runner: RunnerDetail, token: string) => void, cancel: () => void): HTMLFormElement {
  const error = h('p', { class: 'error', role: 'alert', hidden: true });
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Create runner');
  const form = h(
    'form',
    { class: 'card form', 'aria-label': 'New runner' },
    h('label', { for: 'runner-description' }, 'Description'),
    h('input', { id: 'runner-description', name: 'description', autocomplete: 'off', placeholder: 'build host 1' }),
    h('label', { for: 'runner-tags' }, 'Tags'),
    h('input', { id: 'runner-tags', name: 'tags', autocomplete: 'off', placeholder: 'docker, linux (comma-separated)' }),
    h('label', { class: 'check' }, h('input', { type: 'checkbox', name: 'run_untagged', id: 'runner-untagged' }), ' Run untagged jobs'),
    h('label', { for: 'runner-project' }, 'Scope'),
    h('select', { id: 'runner-project', name: 'project' }, h('option', { value: '' }, 'Shared: every project'), projects.map((p) => h('option', { value: p.name }, `Only ${p.name}`))),
    h('label', { for: 'runner-timeout' }, 'Maximum job timeout (seconds, optional)'),
    h('input', { id: 'runner-timeout', name: 'maximum_timeout', type: 'number', min: 600, step: 1, placeholder: 'the job\'s own' }),
    h('label', { class: 'check' }, h('input', { type: 'checkbox', name: 'paused' }), ' Paused (takes no jobs until resumed)'),
    error,
    h('div', { class: 'buttons' }, submit, h('button', { type: 'button', onclick: cancel }, 'Cancel')),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const data = new FormData(form);
    const tags = String(data.get('tags') ?? '');
    const body = {
      description: String(data.get('description') ?? ''),
      tags,
      // No tags: it must take untagged jobs (the server would refuse it otherwise).
      run_untagged: data.get('run_untagged') !== null || tags.trim() === '',
      project: String(data.get('project') ?? ''),
      maximum_timeout: String(data.get('maximum_timeout') ?? ''),
      paused: data.get('paused') !== null,
    };
    submit.disabled = true;
    error.hidden = true;
    post<{ runner: RunnerDetail; token: string }>('/-/ui/api/runners', body)
      .then((result) => created(result.runner, result.token))
      .catch((failure: unknown) => {
        error.textContent = (failure as Error).message;
        error.hidden = false;
      })
      .finally(() => {
        submit.disabled = false;
      });
  });
  return form;
}

export function runnersPage(app: HTMLElement): Page {
  document.title = 'Runners · ci-runner';
  // What is above the list survives redraws: a half-typed form, or the token shown once.
  const panel = h('div', { class: 'runner-panel' });
  const list = h('div', {}, h('p', { class: 'muted' }, 'Loading…'));
  let projects: Array<{ name: string }> = [];
  const closePanel = (): void => {
    replace(panel);
    newButton.hidden = false;
  };
  const newButton = h('button', { type: 'button', class: 'primary', 'data-action': 'new-runner' }, 'New runner');
  newButton.addEventListener('click', () => {
    newButton.hidden = true;
    replace(panel, newRunnerForm(projects, (runner, token) => {
      replace(panel, tokenCard(runner, token, closePanel));
      page.refresh();
    }, closePanel));
    panel.querySelector('input')?.focus();
  });
  replace(app, h('div', { class: 'page-head' }, h('h1', {}, 'Runners'), newButton), panel, list);
  const load = async (signal: AbortSignal) => {
    const [runners, known] = await Promise.all([getJson<RunnerDetail[]>('/-/ui/api/runners', signal), getJson<Array<{ name: string }>>('/-/ui/api/projects', signal)]);
    projects = known;
    return runners;
  };
  // Last contact moves on every poll without a recorded change; a slow redraw keeps it honest.
  const page = loadingPage(
    list,
    load,
    (runners) => {
      if (runners.length === 0) {
        replace(
          list,
          h('div', { class: 'card empty' }, h('p', {}, 'No runners are registered.'), h('p', { class: 'muted' }, 'Create one with "New runner", or register one with ', h('code', {}, `ci-runner register --url ${location.origin} --registration-token TOKEN`), '.')),
        );
        return;
      }
      const table = h(
        'table',
        { class: 'list' },
        h('thead', {}, h('tr', {}, ...['Status', 'Runner', 'Tags', 'Scope', 'Last contact', ''].map((t) => h('th', { scope: 'col' }, t)))),
        h('tbody', {}, runners.map((runner) => row(runner, () => page.refresh()))),
      );
      replace(list, h('div', { class: 'card flush' }, table));
    },
    () => clearInterval(timer),
  );
  const timer = setInterval(() => page.refresh(), 30_000);
  return page;
}
