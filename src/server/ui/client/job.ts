/**
 * `/jobs/:id`: the live log, and beside it what a user asks about a job (status, timings, runner,
 * variables' names, artifacts). The log comes over its own event stream from a byte offset; the
 * rest is redrawn on every announced change without touching the log.
 */
import { getJson, post, type JobDetail } from './api.js';
import { badge, duration, h, liveDuration, replace, size, time } from './dom.js';
import { LogView, MAX_LINES } from './log-view.js';
import { actionButton, nav, type Page } from './page.js';

function buttons(job: JobDetail): HTMLElement {
  const act = (action: string, label: string, className: string) =>
    actionButton(label, className, async () => {
      const result = await post<{ job: { id: number } }>(`/-/ui/api/jobs/${job.id}/${action}`);
      if (result.job.id !== job.id) nav.go(`/jobs/${result.job.id}`);
    }, { 'data-action': action });
  return h(
    'div',
    { class: 'buttons' },
    job.actions.play ? act('play', '▶ Play', 'primary') : null,
    job.actions.cancel && !job.actions.play ? act('cancel', job.actions.force_cancel ? 'Force cancel' : 'Cancel', 'danger') : null,
    job.actions.retry ? act('retry', '↻ Retry', '') : null,
  );
}

function head(job: JobDetail): HTMLElement[] {
  const crumbs = h('p', { class: 'crumbs' }, h('a', { href: '/' }, 'Pipelines'), ' / ', job.pipeline ? h('a', { href: `/pipelines/${job.pipeline.id}` }, `#${job.pipeline.id}`) : '—', ' / ', job.stage);
  return [crumbs, h('div', { class: 'page-head' }, h('h1', { id: 'job-title' }, badge(job.status, job.allow_failure), ' ', job.name), buttons(job))];
}

function facts(job: JobDetail): HTMLElement {
  const item = (label: string, value: Node | string | null) => (value === null ? null : h('div', {}, h('dt', {}, label), h('dd', {}, value)));
  const artifacts = job.artifacts
    ? h(
        'div',
        { class: 'artifacts' },
        h('a', { href: `/-/ui/api/jobs/${job.id}/artifacts`, download: job.artifacts.filename, class: 'button small', 'data-artifacts': '' }, `⬇ ${job.artifacts.filename}`),
        h('div', { class: 'muted small' }, size(job.artifacts.size), ' · ', job.artifacts.expire_at ? h('span', {}, 'expires ', time(job.artifacts.expire_at)) : 'kept'),
      )
    : null;
  return h(
    'aside',
    { class: 'card side' },
    h(
      'dl',
      { class: 'facts' },
      item('Duration', liveDuration(job.duration, job.status === 'running' || job.status === 'canceling' ? job.started_at : null)),
      item('Queued', duration(job.queued_duration)),
      item('Started', time(job.started_at)),
      item('Finished', time(job.finished_at)),
      item('Runner', job.runner ? `#${job.runner.id} ${job.runner.description}` : 'not picked up yet'),
      item('Stage', job.stage),
      item('When', job.when + (job.allow_failure ? ', allowed to fail' : '')),
      item('Tags', job.tags.length ? h('span', {}, job.tags.map((t) => h('span', { class: 'tag' }, t))) : null),
      item('Image', job.image),
      item('Timeout', duration(job.timeout)),
      job.pipeline ? item('Commit', h('span', {}, h('span', { class: 'ref' }, job.pipeline.ref), ' ', h('code', {}, job.pipeline.sha.slice(0, 8)))) : null,
      item('Resource group', job.resource_group),
      item('Coverage', job.coverage === null ? null : `${job.coverage}%`),
      item(
        'Tests',
        job.tests
          ? h('span', { 'data-tests': '' }, `${job.tests.passed} passed, ${job.tests.failed} failed, ${job.tests.skipped} skipped`, job.tests.failed_names.length ? h('ul', { class: 'failed-tests' }, job.tests.failed_names.map((name) => h('li', { class: 'small' }, name))) : null)
          : null,
      ),
      item('Reports', job.reports.length ? h('ul', { class: 'reports' }, job.reports.map((r) => h('li', {}, h('code', {}, r.type), ' ', h('span', { class: 'muted small' }, `${r.filename}, ${size(r.size)}`)))) : null),
      item('Variables', job.variables.length ? h('ul', { class: 'variable-names' }, job.variables.map((v) => h('li', {}, h('code', {}, v.key), v.source === 'pipeline' ? h('span', { class: 'muted small' }, ' (pipeline)') : null))) : 'none'),
    ),
    artifacts ? h('h2', {}, 'Artifacts') : null,
    artifacts,
  );
}

/** Follows the job's log: from where the server says to start, resuming by byte offset after a drop. */
function followLog(id: number, log: LogView): () => void {
  const download = `/-/ui/api/jobs/${id}/trace`;
  let source: EventSource | undefined;
  const open = (): void => {
    source?.close();
    source = new EventSource(`/-/ui/api/jobs/${id}/trace/events`);
    source.addEventListener('start', (event) => {
      const { offset, size: total } = JSON.parse((event as MessageEvent<string>).data) as { offset: number; size: number };
      if (offset > 0 && log.empty) {
        log.fromMiddle();
        log.note(`Showing the end of a ${size(total)} log.`, download);
      }
    });
    source.addEventListener('append', (event) => {
      const atBottom = window.innerHeight + window.scrollY >= document.body.scrollHeight - 40;
      log.append(JSON.parse((event as MessageEvent<string>).data) as string);
      if (atBottom) window.scrollTo(0, document.body.scrollHeight);
    });
    source.addEventListener('skip', () => log.note('The log grew faster than it could be shown; skipped ahead.', download));
    source.addEventListener('reset', () => {
      log.reset();
      open();
    });
    source.addEventListener('end', () => {
      log.finish();
      source?.close();
    });
  };
  open();
  return () => source?.close();
}

export function jobPage(app: HTMLElement, id: number): Page {
  const controller = new AbortController();
  const top = h('div', {});
  const side = h('div', {});
  const logInfo = h('span', { class: 'muted small', 'aria-live': 'off' });
  const log = new LogView(() => log.note(`Only the last ${MAX_LINES.toLocaleString()} lines are kept on this page.`, `/-/ui/api/jobs/${id}/trace`));
  const logCard = h(
    'section',
    { class: 'card log-card', 'aria-label': 'Log' },
    h('div', { class: 'log-head' }, h('h2', {}, 'Log'), logInfo, h('a', { href: `/-/ui/api/jobs/${id}/trace`, download: `job-${id}.log`, class: 'button small' }, '⬇ Full log')),
    log.element,
  );
  let stopLog: (() => void) | undefined;
  let loading = false;
  let again = false;
  const draw = (job: JobDetail): void => {
    document.title = `${job.name} (#${job.id}) · ci-runner`;
    replace(top, head(job));
    replace(side, facts(job));
    logInfo.textContent = size(job.trace_size);
    if (!stopLog) {
      replace(app, top, h('div', { class: 'job-layout' }, logCard, side));
      stopLog = followLog(id, log);
    }
  };
  const load = async (): Promise<void> => {
    if (loading) {
      again = true;
      return;
    }
    loading = true;
    try {
      do {
        again = false;
        draw(await getJson<JobDetail>(`/-/ui/api/jobs/${id}`, controller.signal));
      } while (again && !controller.signal.aborted);
    } catch (error) {
      if (!controller.signal.aborted && !stopLog) replace(app, h('p', { class: 'error', role: 'alert' }, `Could not load job #${id}: ${(error as Error).message}`));
    } finally {
      loading = false;
    }
  };
  void load();
  return {
    refresh: () => void load(),
    dispose: () => {
      controller.abort();
      stopLog?.();
    },
  };
}
