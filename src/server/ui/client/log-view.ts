/**
 * A job's log as it arrives: ANSI colours through ansi_up (which escapes the text and carries colour
 * state across chunks), GitLab's `section_start`/`section_end` markers as collapsible sections with
 * their duration, a carriage return overwriting its line as on a terminal, and `[MASKED]` left as
 * it is. The DOM stays bounded: past MAX_LINES the oldest lines go, and the page says so.
 */
import { AnsiUp } from 'ansi_up';
import { duration, h } from './dom.js';

export const MAX_LINES = 20_000;
const SECTION = /section_(start|end):(\d+):([A-Za-z0-9_.-]+)(?:\[([^\]]*)\])?\r(?:\u001b\[0K)?/g;

interface OpenSection {
  name: string;
  started: number;
  body: HTMLElement;
  timer: HTMLElement;
}

export class LogView {
  readonly element = h('div', { class: 'log', role: 'log', 'aria-label': 'Job log', tabindex: '0' });
  private ansi = new AnsiUp();
  private partial = '';
  private readonly live = h('div', { class: 'line partial' });
  private sections: OpenSection[] = [];
  private lineNumber = 0;
  /** Every line (and section header) shown, oldest first from `head`, for trimming. */
  private queue: Element[] = [];
  private head = 0;
  private trimmed = false;
  /** Numbers only mean something when the log is shown from its first byte. */
  private numbered = true;

  constructor(private readonly onTrim: () => void) {
    this.ansi.use_classes = true;
    this.element.append(this.live);
  }

  /** Starts over (the log was replaced); `firstLine` numbers the first line shown. */
  reset(firstLine = 1): void {
    this.ansi = new AnsiUp();
    this.ansi.use_classes = true;
    this.partial = '';
    this.sections = [];
    this.queue = [];
    this.head = 0;
    this.lineNumber = firstLine - 1;
    this.element.replaceChildren(this.live);
    this.live.textContent = '';
  }

  /** Adds text (any number of lines, the last one possibly unfinished). */
  append(text: string): void {
    const lines = (this.partial + text).split('\n');
    this.partial = lines.pop() ?? '';
    const fragment = new Map<Element, DocumentFragment>();
    for (const line of lines) this.addLine(line, fragment);
    for (const [parent, nodes] of fragment) parent.insertBefore(nodes, parent === this.element ? this.live : null);
    this.live.textContent = plain(this.partial);
    this.trim();
  }

  /** True until the first line is shown. */
  get empty(): boolean {
    return this.queue.length === 0;
  }

  /** The log is shown from somewhere in its middle: its lines get no numbers. */
  fromMiddle(): void {
    this.numbered = false;
  }

  /** The job ended: its last line shows even without a newline. */
  finish(): void {
    if (this.partial !== '') this.append('\n');
  }

  /** A line of the page's own (not from the log), e.g. that the start was skipped. */
  note(text: string, href?: string): void {
    const note = h('div', { class: 'log-note' }, text, href ? h('a', { href, download: '' }, ' Download the full log.') : null);
    this.element.insertBefore(note, this.live);
  }

  private container(fragment: Map<Element, DocumentFragment>): DocumentFragment {
    const parent = this.sections.at(-1)?.body ?? this.element;
    let nodes = fragment.get(parent);
    if (!nodes) {
      nodes = document.createDocumentFragment();
      fragment.set(parent, nodes);
    }
    return nodes;
  }

  private place(node: Element, fragment: Map<Element, DocumentFragment>): void {
    this.container(fragment).append(node);
    this.queue.push(node);
  }

  private addLine(raw: string, fragment: Map<Element, DocumentFragment>): void {
    let rest = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    SECTION.lastIndex = 0;
    let match: RegExpExecArray | null;
    let consumed = 0;
    const markers: RegExpExecArray[] = [];
    while ((match = SECTION.exec(rest)) !== null) markers.push(match);
    for (const [i, marker] of markers.entries()) {
      const before = rest.slice(consumed, marker.index);
      if (before.trim() !== '') this.place(this.lineElement(before), fragment);
      consumed = marker.index + marker[0].length;
      const nextAt = markers[i + 1]?.index ?? rest.length;
      if (marker[1] === 'start') {
        this.openSection(marker[3] ?? '', Number(marker[2]), marker[4] ?? '', rest.slice(consumed, nextAt), fragment);
        consumed = nextAt;
      } else {
        this.closeSection(marker[3] ?? '', Number(marker[2]));
      }
    }
    rest = rest.slice(consumed);
    if (markers.length === 0 || rest !== '') this.place(this.lineElement(rest), fragment);
  }

  /** One line: ANSI state advances through every carriage-return segment, the last one is shown. */
  private lineElement(text: string): HTMLElement {
    const segments = text.split('\r');
    const last = segments.pop() ?? '';
    for (const segment of segments) this.ansi.ansi_to_html(segment);
    this.lineNumber += 1;
    const line = h('div', { class: 'line', 'data-n': this.numbered ? this.lineNumber : undefined });
    line.innerHTML = this.ansi.ansi_to_html(last);
    return line;
  }

  private openSection(name: string, started: number, options: string, header: string, fragment: Map<Element, DocumentFragment>): void {
    const timer = h('span', { class: 'section-duration' });
    const summary = h('summary', {}, this.lineElement(header), timer);
    const body = h('div', { class: 'section-body' });
    const details = h('details', { class: 'section', 'data-section': name }, summary, body);
    if (!/collapsed=true/.test(options)) details.open = true;
    this.place(details, fragment);
    this.sections.push({ name, started, body, timer });
  }

  private closeSection(name: string, ended: number): void {
    const at = this.sections.findLastIndex((s) => s.name === name);
    if (at < 0) return;
    const section = this.sections[at];
    if (section) section.timer.textContent = duration(Math.max(0, ended - section.started));
    this.sections.length = at;
  }

  private trim(): void {
    if (this.queue.length - this.head <= MAX_LINES) return;
    while (this.queue.length - this.head > MAX_LINES) {
      const oldest = this.queue[this.head++];
      // A section still open keeps its frame (its new lines go into it); its old lines go one by one.
      if (oldest && !this.sections.some((s) => s.body.parentElement === oldest)) oldest.remove();
    }
    if (this.head > MAX_LINES) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
    if (!this.trimmed) {
      this.trimmed = true;
      this.onTrim();
    }
  }
}

/** The unfinished last line, shown without colours until it is complete. */
function plain(text: string): string {
  const last = text.split('\r').pop() ?? '';
  return last.replace(SECTION, '').replace(/\u001b\[[0-9;?]*[A-Za-z]/g, '');
}
