/**
 * Secret masking before bytes reach the spool. Each occurrence of a secret becomes `[MASKED]`; a
 * token prefix (GitLab's `glpat-`, a coordinator's `features.token_mask_prefixes`) stays and the
 * token after it (letters, digits and `-._=`, as GitLab Runner's token sanitizer reads one) becomes
 * `[MASKED]`: `glpat-abc123` → `glpat-[MASKED]`.
 *
 * Contract: the output does not depend on how the input was split into chunks. At each position the
 * earliest match wins, and among patterns matching there the longest (a secret before a prefix of
 * the same length); matching resumes after it (after a prefix: after its token). A position near the
 * end of the input is undecided only while the bytes from it to the end are a proper prefix of some
 * pattern (more output could complete a match there); from the first such position the bytes are held
 * back until more output arrives or `end()` is called. So at most `maxLength − 1` bytes are held, and
 * usually none: ordinary output is not delayed. The masker works on bytes (the secrets' UTF-8
 * encodings) and runs after UTF-8 sanitising, so both sides use the same encoding.
 *
 * Cost: each pattern follows the output with its own search state (stream-pattern.ts), so a chunk
 * costs at most (patterns × chunk bytes) steps, and held-back bytes are never searched again: a long
 * or repetitive secret, or output made to resemble one, cannot make a write cost more. Held-back
 * bytes are kept as the chunks they came in (copied once), never concatenated again.
 */
import { StreamPattern } from './stream-pattern.js';

export const MASK = '[MASKED]';
const MASK_BYTES = Buffer.from(MASK);
const EMPTY = Buffer.alloc(0);

/** The bytes a token is made of after its prefix (GitLab Runner's token alphabet). */
const TOKEN_BYTE = new Uint8Array(256);
for (const c of '-.0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz=') TOKEN_BYTE[c.charCodeAt(0)] = 1;

export interface MaskerOptions {
  /** Token prefixes: the prefix stays, the token that follows it is masked. */
  tokenPrefixes?: readonly string[];
}

interface Pattern {
  search: StreamPattern;
  /** A token prefix rather than a secret. */
  prefix: boolean;
  /** Absolute stream offsets where complete occurrences start, ascending; live from `head` on. */
  starts: number[];
  head: number;
}

/** Held bytes, at their absolute offset; `own`: a copy of ours, not the caller's buffer. */
interface Held {
  at: number;
  bytes: Buffer;
  own: boolean;
}

export class Masker {
  /** Longest first, so that a tie at one position picks the longest pattern. */
  private readonly patterns: Pattern[];
  private held: Held[] = [];
  /** Bytes pushed so far; offsets below are absolute positions in the stream. */
  private total = 0;
  /** Everything before this offset has been returned. */
  private emitted = 0;
  /** After a token prefix at the end of the bytes so far: its token may go on in the next chunk. */
  private token: 'none' | 'after-prefix' | 'masking' = 'none';

  constructor(secrets: readonly string[], options: MaskerOptions = {}, from?: Masker) {
    if (from) {
      this.patterns = from.patterns.map((pattern) => ({ search: pattern.search.fresh(), prefix: pattern.prefix, starts: [], head: 0 }));
      return;
    }
    const make = (texts: readonly string[], prefix: boolean): Pattern[] =>
      [...new Set(texts.filter((text) => text.length > 0))].map((text) => ({ search: new StreamPattern(Buffer.from(text)), prefix, starts: [], head: 0 }));
    const all = [...make(secrets, false), ...make(options.tokenPrefixes ?? [], true)];
    // Stable: a secret keeps its place before a prefix of the same length.
    this.patterns = all.sort((a, b) => b.search.length - a.search.length);
  }

  /** A masker of the same patterns with a state of its own (one per stream of the trace), sharing their tables. */
  fork(): Masker {
    return new Masker([], {}, this);
  }

  /** Masks what can be decided so far; holds back at most `maxLength − 1` bytes. */
  push(chunk: Buffer): Buffer {
    if (this.patterns.length === 0) return chunk;
    const base = this.total;
    this.total += chunk.length;
    if (chunk.length > 0) this.held.push({ at: base, bytes: chunk, own: false });
    for (const pattern of this.patterns) {
      const { starts, search } = pattern;
      search.feed(chunk, (start) => starts.push(base + start));
    }
    return this.drain(false);
  }

  /** Releases the held-back tail, masked. */
  end(): Buffer {
    if (this.patterns.length === 0) return EMPTY;
    const out = this.drain(true);
    for (const pattern of this.patterns) {
      pattern.search.state = 0;
      pattern.starts = [];
      pattern.head = 0;
    }
    return out;
  }

  /**
   * Returns what is decided from `emitted` on. Each pattern's search state is kept to occurrences
   * that start at the position reached or after it (what came before is decided): so the state says
   * where the first undecided position is, and new output only extends it.
   */
  private drain(final: boolean): Buffer {
    const end = this.total;
    const parts: Buffer[] = [];
    let position = this.continueToken(this.emitted, parts, final);
    const undecidedFrom = (from: number): number => {
      if (final) return end;
      let first = end;
      for (const { search } of this.patterns) {
        search.state = search.fit(search.state, end - from);
        if (search.state > 0 && end - search.state < first) first = end - search.state;
      }
      return first;
    };
    for (;;) {
      const found = this.earliest(position);
      const decided = undecidedFrom(position);
      if (found === undefined || found.start >= decided) {
        this.copy(parts, position, decided);
        position = decided;
        break;
      }
      const { pattern, start } = found;
      const after = start + pattern.search.length;
      if (pattern.prefix) {
        this.copy(parts, position, after);
        this.token = 'after-prefix';
        position = this.continueToken(after, parts, final);
      } else {
        this.copy(parts, position, start);
        parts.push(MASK_BYTES);
        position = after;
      }
    }
    this.emitted = position;
    this.keepFrom(position);
    if (parts.length === 0) return EMPTY;
    return parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts);
  }

  /** The live occurrence that starts first at or after `position`, the longest pattern on a tie. */
  private earliest(position: number): { pattern: Pattern; start: number } | undefined {
    let best: Pattern | undefined;
    let bestStart = 0;
    for (const pattern of this.patterns) {
      const { starts } = pattern;
      let head = pattern.head;
      while (head < starts.length && (starts[head] as number) < position) head += 1;
      pattern.head = head;
      const start = starts[head];
      if (start !== undefined && (best === undefined || start < bestStart)) {
        best = pattern;
        bestStart = start;
      }
    }
    return best && { pattern: best, start: bestStart };
  }

  /**
   * After a token prefix (`this.token`): skips the token's bytes from `from`, masking them once;
   * returns where the token ended (the end of the bytes so far when it may go on).
   */
  private continueToken(from: number, parts: Buffer[], final: boolean): number {
    if (this.token === 'none') return from;
    const to = this.tokenEnd(from);
    if (to > from && this.token === 'after-prefix') {
      parts.push(MASK_BYTES);
      this.token = 'masking';
    }
    if (to < this.total || final) this.token = 'none';
    return to;
  }

  /** The first offset at or after `from` that is not a token byte (the end of the bytes so far when none is). */
  private tokenEnd(from: number): number {
    for (const { at, bytes } of this.held) {
      if (at + bytes.length <= from) continue;
      for (let i = Math.max(0, from - at); i < bytes.length; i += 1) if (TOKEN_BYTE[bytes[i] as number] === 0) return at + i;
    }
    return Math.max(from, this.total);
  }

  /** Appends the held bytes in [from, to). */
  private copy(parts: Buffer[], from: number, to: number): void {
    if (to <= from) return;
    for (const { at, bytes } of this.held) {
      const a = Math.max(from, at);
      const b = Math.min(to, at + bytes.length);
      if (a < b) parts.push(bytes.subarray(a - at, b - at));
    }
  }

  /**
   * Forgets what is before `position`. What is kept of the caller's buffer is copied; kept pieces are
   * joined so that a piece is never shorter than the one after it, which keeps them few (about log₂
   * of the bytes held) and copies each byte a few times at most, however small the writes are.
   */
  private keepFrom(position: number): void {
    const kept: Held[] = [];
    for (const held of this.held) {
      if (held.at + held.bytes.length <= position) continue;
      const skip = Math.max(0, position - held.at);
      const bytes = held.own ? held.bytes.subarray(skip) : Buffer.from(held.bytes.subarray(skip));
      kept.push({ at: held.at + skip, bytes, own: true });
      while (kept.length >= 2 && (kept[kept.length - 2] as Held).bytes.length <= (kept[kept.length - 1] as Held).bytes.length) {
        const last = kept.pop() as Held;
        const before = kept.pop() as Held;
        kept.push({ at: before.at, bytes: Buffer.concat([before.bytes, last.bytes]), own: true });
      }
    }
    this.held = kept;
    for (const pattern of this.patterns) {
      if (pattern.head === pattern.starts.length) {
        pattern.starts = [];
        pattern.head = 0;
      } else if (pattern.head > 1024 && pattern.head * 2 > pattern.starts.length) {
        pattern.starts = pattern.starts.slice(pattern.head);
        pattern.head = 0;
      }
    }
  }
}
