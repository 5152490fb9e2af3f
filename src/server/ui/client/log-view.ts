/**
 * A job's log as it arrives: ANSI colours through ansi_up (which escapes the text and carries colour
 * state across chunks), GitLab's `section_start`/`section_end` markers as collapsible sections with
 * their duration, a carriage return overwriting its line as on a terminal, and `[MASKED]` left as
 * it is. Lines stamped as GitLab Runner 19 stamps them (FF_TIMESTAMPS: `<time> <stream><O|E><' '|+>`)
 * show their time in a column of its own, and a `+` line goes on the line before it, as GitLab's page
 * reads them. The DOM stays bounded: past MAX_LINES the oldest lines go, and the page says so.
 */
import { AnsiUp } from 'ansi_up';
import { duration, h } from './dom.js';

export const MAX_LINES = 20_000;
const SECTION = /section_(start|end):(\d+):([A-Za-z0-9_.-]+)(?:\[([^\]]*)\])?\r(?:\u001b\[0K)?/g;
/** A line's stamp: the time (its clock part), the stream, and `+` for a continuation. */
const STAMP = /^\d{4}-\d\d-\d\dT(\d\d:\d\d:\d\d)\.\d{6}Z [0-9a-f]{2}[OE]([ +])/;
const STAMP_LENGTH = 32;

interface StampedLine {
  text: string;
  /** `HH:MM:SS` (UTC) and the whole stamp, for a stamped line. */
  time?: { clock: string; full: string };
  continues: boolean;
}

/** A line of the log with its stamp, if it has one, taken off. */
function unstamp(raw: string): StampedLine {
  const match = raw.length >= STAMP_LENGTH && raw[26] === 'Z' ? STAMP.exec(raw) : null;
  if (!match) return { text: raw, continues: false };
  return { text: raw.slice(STAMP_LENGTH), time: { clock: match[1] ?? '', full: raw.slice(0, 27) }, continues: match[2] === '+' };
}

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
  /** The line a `+` line goes on: the last one shown, unless a section marker came after it. */
  private last: HTMLElement | undefined;
  /** The last line ended with a carriage return: what goes on it starts it over. */
  private lastReturned = false;

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
    this.last = undefined;
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
    this.live.textContent = plain(unstamp(this.partial).text);
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
    const line = unstamp(raw);
    if (line.time) this.element.classList.add('stamped');
    const returned = line.text.endsWith('\r');
    let rest = returned ? line.text.slice(0, -1) : line.text;
    // A `+` line's text before its first marker goes on the line before (over it, after a `\r`).
    let onto = line.continues ? this.last : undefined;
    const over = this.lastReturned;
    const text = (piece: string): void => {
      if (onto) this.continueLine(onto, over ? `\r${piece}` : piece);
      else this.place(this.lineElement(piece, line.time), fragment);
      onto = undefined;
    };
    SECTION.lastIndex = 0;
    let match: RegExpExecArray | null;
    let consumed = 0;
    const markers: RegExpExecArray[] = [];
    while ((match = SECTION.exec(rest)) !== null) markers.push(match);
    for (const [i, marker] of markers.entries()) {
      const before = rest.slice(consumed, marker.index);
      // Only colour codes before a marker (a line the runner ended with a reset) make no line.
      if (plain(before).trim() !== '') text(before);
      else this.ansi.ansi_to_html(before);
      onto = undefined;
      consumed = marker.index + marker[0].length;
      const nextAt = markers[i + 1]?.index ?? rest.length;
      if (marker[1] === 'start') {
        this.openSection(marker[3] ?? '', Number(marker[2]), marker[4] ?? '', rest.slice(consumed, nextAt), fragment, line.time);
        consumed = nextAt;
      } else {
        this.closeSection(marker[3] ?? '', Number(marker[2]));
        this.last = undefined;
      }
    }
    rest = rest.slice(consumed);
    if (markers.length === 0 || rest !== '') text(rest);
    this.lastReturned = returned;
  }

  /** One line: ANSI state advances through every carriage-return segment, the last one is shown. */
  private lineElement(text: string, time?: StampedLine['time']): HTMLElement {
    const segments = text.split('\r');
    const last = segments.pop() ?? '';
    for (const segment of segments) this.ansi.ansi_to_html(segment);
    this.lineNumber += 1;
    const line = h('div', { class: 'line', 'data-n': this.numbered ? this.lineNumber : undefined, 'data-time': time?.clock, title: time?.full });
    line.innerHTML = this.ansi.ansi_to_html(last);
    this.last = line;
    return line;
  }

  /** More of a line shown already (a `+` line): a carriage return in it starts the line over. */
  private continueLine(line: HTMLElement, text: string): void {
    const segments = text.split('\r');
    const last = segments.pop() ?? '';
    for (const segment of segments) this.ansi.ansi_to_html(segment);
    const html = this.ansi.ansi_to_html(last);
    if (segments.length > 0) line.innerHTML = html;
    else line.insertAdjacentHTML('beforeend', html);
  }

  private openSection(name: string, started: number, options: string, header: string, fragment: Map<Element, DocumentFragment>, time?: StampedLine['time']): void {
    const timer = h('span', { class: 'section-duration' });
    const summary = h('summary', {}, this.lineElement(header, time), timer);
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
