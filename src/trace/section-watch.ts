/**
 * The log sections a job's own output opens (`section_start:<ts>:<name>[options]\r\e[0K`, which GitLab's
 * page folds, as it does the runner's): which are still open when its stage ends. A job may print
 * sections of its own (they pass through untouched), but one it leaves open, collapsed, would fold
 * everything after it on GitLab's page into it, the runner's `ERROR: Job failed` line included: the
 * stage closes what its output left open before its own section ends (agent/job/log-sections.ts).
 *
 * Markers are recognised as GitLab reads them (Gitlab::Regex.build_trace_section_regex) and named as
 * it names them (lower case, anything but a-z0-9 as `-`), so closing by that name closes what GitLab
 * opened. The search is a native `indexOf` per chunk; a marker split across chunks is completed from
 * the next one, up to MAX_MARKER bytes (a longer one is not a marker anybody writes).
 */

const PREFIX = Buffer.from('section_');
const SUFFIX = Buffer.from('\r\u001b[0K');
/** Longest marker followed across chunks. */
const MAX_MARKER = 4096;
const OPTIONS = /^\[\w+=\w+(?:, ?\w+=\w+)*\]$/;
const EMPTY = Buffer.alloc(0);

type Parsed = { kind: 'start' | 'end'; name: string; length: number } | 'partial' | undefined;

export class SectionWatch {
  /** Open sections by GitLab's name, in the order they opened. */
  private readonly open = new Set<string>();
  /** The start of a marker the last chunk ended in. */
  private carry: Buffer = EMPTY;

  /** Reads one chunk of the stream's output (after masking). */
  observe(chunk: Buffer): void {
    let data = chunk;
    if (this.carry.length > 0) {
      data = Buffer.concat([this.carry, chunk]);
      this.carry = EMPTY;
    }
    for (let at = data.indexOf(PREFIX); at >= 0; ) {
      const marker = parseMarker(data, at);
      if (marker === 'partial') {
        if (data.length - at <= MAX_MARKER) this.carry = Buffer.from(data.subarray(at));
        return;
      }
      if (marker?.kind === 'start') {
        this.open.delete(marker.name);
        this.open.add(marker.name);
      } else if (marker?.kind === 'end') this.open.delete(marker.name);
      at = data.indexOf(PREFIX, at + (marker?.length ?? 1));
    }
    // The chunk may end in the first bytes of `section_`.
    const tail = data.subarray(Math.max(0, data.length - PREFIX.length + 1));
    for (let k = tail.length; k > 0; k -= 1) {
      if (PREFIX.compare(tail, tail.length - k, tail.length, 0, k) === 0) {
        this.carry = Buffer.from(tail.subarray(tail.length - k));
        break;
      }
    }
  }

  /** The sections opened and not closed, innermost first; they count as closed from here on. */
  takeOpen(): string[] {
    const names = [...this.open].reverse();
    this.open.clear();
    this.carry = EMPTY;
    return names;
  }
}

/** GitLab's name for a section (its Ansi2json converter's sanitize_section_name). */
export function gitlabSectionName(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]/g, '-');
}

/** The marker at `at` (which starts with `section_`), or 'partial' when the data ends inside one. */
function parseMarker(data: Buffer, at: number): Parsed {
  let i = at + PREFIX.length;
  const word = (text: string): boolean | 'partial' => {
    for (let k = 0; k < text.length; k += 1, i += 1) {
      if (i >= data.length) return 'partial';
      if (data[i] !== text.charCodeAt(k)) return false;
    }
    return true;
  };
  let kind: 'start' | 'end';
  if (data[i] === 0x73 /* s */) kind = 'start';
  else if (data[i] === 0x65 /* e */) kind = 'end';
  else return i >= data.length ? 'partial' : undefined;
  const keyword = word(`${kind}:`);
  if (keyword !== true) return keyword === 'partial' ? 'partial' : undefined;
  const digits = i;
  while (i < data.length && isDigit(data[i])) i += 1;
  if (i >= data.length) return 'partial';
  if (i === digits || data[i] !== 0x3a /* : */) return undefined;
  i += 1;
  const nameAt = i;
  while (i < data.length && isNameByte(data[i])) i += 1;
  if (i >= data.length) return 'partial';
  if (i === nameAt) return undefined;
  const name = data.toString('latin1', nameAt, i);
  if (data[i] === 0x5b /* [ */) {
    const close = data.indexOf(0x5d /* ] */, i);
    if (close < 0) return data.length - i > 256 ? undefined : 'partial';
    if (!OPTIONS.test(data.toString('latin1', i, close + 1))) return undefined;
    i = close + 1;
  }
  for (let k = 0; k < SUFFIX.length; k += 1, i += 1) {
    if (i >= data.length) return 'partial';
    if (data[i] !== SUFFIX[k]) return undefined;
  }
  return { kind, name: gitlabSectionName(name), length: i - at };
}

function isDigit(byte: number | undefined): boolean {
  return byte !== undefined && byte >= 0x30 && byte <= 0x39;
}

/** [a-zA-Z0-9_.-] */
function isNameByte(byte: number | undefined): boolean {
  if (byte === undefined) return false;
  return (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a) || byte === 0x5f || byte === 0x2e || byte === 0x2d;
}
