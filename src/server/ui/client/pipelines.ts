/** `/`: the pipelines, newest first, redrawn whenever something changes. */
import { getJson, type PipelineSummary } from './api.js';
import { badge, h, liveDuration, replace, time } from './dom.js';
import { loadingPage, type Page } from './page.js';

interface PipelinesPage {
  pipelines: PipelineSummary[];
  more: boolean;
}

function jobDots(pipeline: PipelineSummary): HTMLElement {
  return h(
    'span',
    { class: 'dots' },
    pipeline.jobs.map((job) => h('a', { href: `/jobs/${job.id}`, class: `dot status-${job.status}`, title: `${job.name}: ${job.status}`, 'aria-label': `${job.name}: ${job.status}` })),
  );
}

function row(pipeline: PipelineSummary): HTMLElement {
  return h(
    'tr',
    { 'data-pipeline': pipeline.id },
    h('td', { 'data-label': 'Status' }, badge(pipeline.status)),
    h('td', { 'data-label': 'Pipeline' }, h('a', { href: `/pipelines/${pipeline.id}`, class: 'strong' }, `#${pipeline.id}`), h('div', { class: 'muted small' }, pipeline.project ?? '')),
    h('td', { 'data-label': 'Ref' }, h('span', { class: 'ref', title: pipeline.tag ? 'tag' : 'branch' }, pipeline.ref), ' ', h('code', { class: 'sha', title: pipeline.sha }, pipeline.sha.slice(0, 8))),
    h('td', { 'data-label': 'Jobs' }, jobDots(pipeline)),
    h('td', { 'data-label': 'Duration' }, liveDuration(pipeline.duration, pipeline.status === 'running' ? pipeline.started_at : null)),
    h('td', { 'data-label': 'Created' }, time(pipeline.created_at)),
  );
}

export function pipelinesPage(app: HTMLElement): Page {
  const before = /^\?before=(\d+)$/.exec(location.search)?.[1];
  return loadingPage(
    app,
    (signal) => getJson<PipelinesPage>(`/-/ui/api/pipelines${before ? `?before=${before}` : ''}`, signal),
    (data) => {
      const heading = h('div', { class: 'page-head' }, h('h1', {}, 'Pipelines'));
      if (data.pipelines.length === 0) {
        replace(app, heading, h('div', { class: 'card empty' }, h('p', {}, 'No pipelines yet.'), h('p', { class: 'muted' }, 'Run one from a project\'s .gitlab-ci.yml with “Run pipeline”, or start the server with --pipeline.')));
        return;
      }
      const table = h(
        'table',
        { class: 'list' },
        h('thead', {}, h('tr', {}, ...['Status', 'Pipeline', 'Ref', 'Jobs', 'Duration', 'Created'].map((t) => h('th', { scope: 'col' }, t)))),
        h('tbody', {}, data.pipelines.map(row)),
      );
      const last = data.pipelines.at(-1);
      const pager = h(
        'p',
        { class: 'pager' },
        before ? h('a', { href: '/' }, '← Newest') : null,
        data.more && last ? h('a', { href: `/?before=${last.id}` }, 'Older →') : null,
      );
      replace(app, heading, h('div', { class: 'card flush' }, table), pager);
    },
  );
}
