/** `/pipelines/new`: run a project's `.gitlab-ci.yml` at a ref, with optional variables. */
import { getJson, post, type PipelineDetail } from './api.js';
import { h, replace } from './dom.js';
import { loadingPage, nav, type Page } from './page.js';

function variableRow(): HTMLElement {
  const row = h(
    'div',
    { class: 'variable-row' },
    h('input', { name: 'var-key', placeholder: 'NAME', 'aria-label': 'Variable name', pattern: '[A-Za-z_][A-Za-z0-9_]*', autocomplete: 'off' }),
    h('input', { name: 'var-value', type: 'password', placeholder: 'value', 'aria-label': 'Variable value', autocomplete: 'off' }),
  );
  row.append(h('button', { type: 'button', class: 'link', 'aria-label': 'Remove variable', onclick: () => row.remove() }, 'Remove'));
  return row;
}

function form(projects: Array<{ id: number; name: string }>): HTMLFormElement {
  const error = h('p', { class: 'error', role: 'alert', hidden: true });
  const variables = h('div', { class: 'variables' });
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Run pipeline');
  const element = h(
    'form',
    { class: 'card form' },
    h('label', { for: 'project' }, 'Project'),
    h('select', { id: 'project', name: 'project', required: true }, projects.map((p) => h('option', { value: p.name }, p.name))),
    h('label', { for: 'ref' }, 'Branch, tag or commit'),
    h('input', { id: 'ref', name: 'ref', value: 'main', required: true, autocomplete: 'off' }),
    h('fieldset', {}, h('legend', {}, 'Variables'), h('p', { class: 'muted small' }, 'Sent to the jobs as masked values; the page never shows them again.'), variables, h('button', { type: 'button', class: 'link', onclick: () => variables.append(variableRow()) }, '+ Add variable')),
    error,
    submit,
  );
  element.addEventListener('submit', (event) => {
    event.preventDefault();
    const data = new FormData(element);
    const keys = data.getAll('var-key').map(String);
    const values = data.getAll('var-value').map(String);
    const vars: Record<string, string> = {};
    keys.forEach((key, i) => {
      if (key.trim() !== '') vars[key.trim()] = values[i] ?? '';
    });
    submit.disabled = true;
    error.hidden = true;
    post<{ pipeline: PipelineDetail }>('/-/ui/api/pipelines', { project: data.get('project'), ref: data.get('ref'), variables: vars })
      .then((result) => nav.go(`/pipelines/${result.pipeline.id}`))
      .catch((failure: unknown) => {
        error.textContent = (failure as Error).message;
        error.hidden = false;
      })
      .finally(() => {
        submit.disabled = false;
      });
  });
  return element;
}

export function newPipelinePage(app: HTMLElement): Page {
  let drawn = false;
  return loadingPage(
    app,
    (signal) => getJson<Array<{ id: number; name: string }>>('/-/ui/api/projects', signal),
    (projects) => {
      if (drawn) return; // a change elsewhere must not wipe what is being typed
      drawn = true;
      document.title = 'Run pipeline · ci-runner';
      const heading = h('div', { class: 'page-head' }, h('h1', {}, 'Run pipeline'));
      if (projects.length === 0) {
        replace(app, heading, h('div', { class: 'card empty' }, h('p', {}, 'No projects. Start the server with ', h('code', {}, '--project NAME=PATH'), '.')));
        return;
      }
      replace(app, heading, h('p', { class: 'muted' }, 'Runs the project\'s .gitlab-ci.yml as committed at the ref.'), form(projects));
    },
  );
}
