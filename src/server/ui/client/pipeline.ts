/** `/pipelines/:id`: the jobs by stage, as columns, with their buttons. */
import { getJson, post, type Actions, type JobSummary, type PipelineDetail } from './api.js';
import { badge, h, liveDuration, replace, time } from './dom.js';
import { actionButton, loadingPage, nav, type Page } from './page.js';

type Job = JobSummary & { actions: Actions };

/** The one button a job card has room for, as GitLab shows it: play, cancel or retry. */
function jobButton(job: Job): HTMLButtonElement | null {
  const act = (action: string, label: string, icon: string) =>
    actionButton(icon, `icon-button ${action}`, async () => {
      const result = await post<{ job: { id: number } }>(`/-/ui/api/jobs/${job.id}/${action}`);
      if (action === 'retry') nav.go(`/jobs/${result.job.id}`);
    }, { 'aria-label': `${label} ${job.name}`, title: `${label} ${job.name}`, 'data-action': action });
  if (job.actions.play) return act('play', 'Play', '▶');
  if (job.actions.cancel) return act('cancel', job.actions.force_cancel ? 'Force cancel' : 'Cancel', '✕');
  if (job.actions.retry) return act('retry', 'Retry', '↻');
  return null;
}

function jobCard(job: Job): HTMLElement {
  const notes = [job.when === 'manual' ? h('span', { class: 'tag' }, 'manual') : null, job.allow_failure ? h('span', { class: 'tag', title: 'allowed to fail' }, 'allow failure') : null];
  return h(
    'li',
    { class: `job-card status-${job.status === 'failed' && job.allow_failure ? 'warning' : job.status}`, 'data-job': job.id, 'data-status': job.status },
    h('div', { class: 'job-main' }, badge(job.status, job.allow_failure), h('a', { href: `/jobs/${job.id}`, class: 'job-name' }, job.name), jobButton(job)),
    h(
      'div',
      { class: 'job-meta muted small' },
      liveDuration(job.duration, job.status === 'running' || job.status === 'canceling' ? job.started_at : null),
      job.runner ? h('span', { title: `runner #${job.runner.id}` }, job.runner.description) : null,
      ...notes,
    ),
  );
}

function header(pipeline: PipelineDetail): HTMLElement {
  const canCancel = pipeline.stages.some((s) => s.jobs.some((j) => j.actions.cancel && j.status !== 'manual'));
  return h(
    'div',
    { class: 'page-head' },
    h('div', {}, h('p', { class: 'crumbs' }, h('a', { href: '/' }, 'Pipelines'), ' / '), h('h1', {}, `Pipeline #${pipeline.id} `, pipeline.name ? h('span', { class: 'pipeline-name' }, pipeline.name, ' ') : null, badge(pipeline.status))),
    canCancel
      ? actionButton('Cancel running', 'danger', async () => {
          for (const stage of pipeline.stages) for (const job of stage.jobs) if (job.actions.cancel && job.status !== 'manual') await post(`/-/ui/api/jobs/${job.id}/cancel`);
        })
      : null,
  );
}

function summary(pipeline: PipelineDetail): HTMLElement {
  const item = (label: string, value: Node | string) => h('div', {}, h('dt', {}, label), h('dd', {}, value));
  return h(
    'dl',
    { class: 'facts card' },
    item('Project', pipeline.project ?? '—'),
    item('Ref', h('span', { class: 'ref' }, pipeline.ref)),
    item('Commit', h('code', { title: pipeline.sha }, pipeline.sha.slice(0, 8))),
    item('Created', time(pipeline.created_at)),
    item('Duration', liveDuration(pipeline.duration, pipeline.status === 'running' ? pipeline.started_at : null)),
    pipeline.variables.length ? item('Variables', pipeline.variables.join(', ')) : null as unknown as HTMLElement,
    pipeline.not_applied.length ? item('Not applied locally', h('ul', { class: 'not-applied' }, pipeline.not_applied.map((line) => h('li', { class: 'small' }, line)))) : null as unknown as HTMLElement,
  );
}

export function pipelinePage(app: HTMLElement, id: number): Page {
  return loadingPage(
    app,
    (signal) => getJson<PipelineDetail>(`/-/ui/api/pipelines/${id}`, signal),
    (pipeline) => {
      document.title = `Pipeline #${pipeline.id} · ci-runner`;
      const stages = h(
        'div',
        { class: 'stages' },
        pipeline.stages.map((stage) => h('section', { class: 'stage', 'aria-label': `stage ${stage.name}` }, h('h2', {}, stage.name), h('ul', { class: 'jobs' }, stage.jobs.map(jobCard)))),
      );
      replace(app, header(pipeline), summary(pipeline), stages);
    },
  );
}
