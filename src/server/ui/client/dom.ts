/** Building the page without a framework: an element helper and the small formatters every page uses. */

type Child = Node | string | number | null | undefined | false;
type Attrs = Record<string, string | number | boolean | undefined | ((event: Event) => void)>;

/** `h('a', { href: '/' }, 'Home')`: attributes, `on…` listeners, then children (text is escaped by the DOM). */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Array<Child | Child[]>): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    if (typeof value === 'function') element.addEventListener(name.slice(2).toLowerCase(), value);
    else if (value === true) element.setAttribute(name, '');
    else element.setAttribute(name, String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    element.append(typeof child === 'object' ? child : String(child));
  }
  return element;
}

/** Replaces everything in `parent`. */
export function replace(parent: Element, ...children: Array<Child | Child[]>): void {
  parent.replaceChildren(...children.flat().filter((c): c is Node | string | number => c !== null && c !== undefined && c !== false).map((c) => (typeof c === 'object' ? c : String(c))));
}

/** `1h 2m`, `3m 4s`, `5s`; an em dash when unknown. */
export function duration(seconds: number | null): string {
  if (seconds === null) return '—';
  const s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
}

/** A duration that keeps counting while `runningSince` is set (main.ts ticks every `[data-since]`). */
export function liveDuration(seconds: number | null, runningSince: string | null): HTMLElement {
  return h('span', { 'data-since': runningSince ?? undefined }, duration(seconds));
}

/** Brings every counting duration on the page up to now. */
export function tickDurations(): void {
  for (const element of document.querySelectorAll<HTMLElement>('[data-since]')) {
    const since = Date.parse(element.dataset.since ?? '');
    if (!Number.isNaN(since)) element.textContent = duration((Date.now() - since) / 1000);
  }
}

/** `12 B`, `3.4 KiB`, `5.6 MiB`. */
export function size(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KiB', 'MiB', 'GiB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

/** `just now`, `5 minutes ago`, `3 days ago`, or in the future `in 2 days`. */
export function ago(iso: string | null): string {
  if (!iso) return 'never';
  const diff = (Date.now() - Date.parse(iso)) / 1000;
  const abs = Math.abs(diff);
  const [amount, unit] = abs < 45 ? [0, ''] : abs < 3600 ? [Math.round(abs / 60), 'minute'] : abs < 86400 ? [Math.round(abs / 3600), 'hour'] : [Math.round(abs / 86400), 'day'];
  if (amount === 0) return 'just now';
  const text = `${amount} ${unit}${amount === 1 ? '' : 's'}`;
  return diff >= 0 ? `${text} ago` : `in ${text}`;
}

/** A `<time>` showing `ago()` with the exact moment as its tooltip. */
export function time(iso: string | null): HTMLElement {
  return iso ? h('time', { datetime: iso, title: new Date(iso).toLocaleString() }, ago(iso)) : h('span', { class: 'muted' }, '—');
}

const ICONS: Record<string, string> = {
  success: '✓',
  failed: '✕',
  canceled: '⊘',
  canceling: '⊘',
  skipped: '»',
  running: '◔',
  pending: '◷',
  waiting_for_resource: '◷',
  created: '○',
  manual: '⚙',
};

/** The coloured status badge; a failure that was allowed shows as a warning, as GitLab does. */
export function badge(status: string, allowFailure = false): HTMLElement {
  const warn = status === 'failed' && allowFailure;
  return h(
    'span',
    { class: `badge status-${warn ? 'warning' : status}`, 'data-status': status, title: warn ? 'failed (allowed to fail)' : status },
    h('span', { class: 'icon', 'aria-hidden': 'true' }, ICONS[status] ?? '•'),
    warn ? 'failed' : status.replaceAll('_', ' '),
  );
}
