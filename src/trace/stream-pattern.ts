/**
 * One literal byte pattern searched for in a stream, Knuth–Morris–Pratt style: its state (how much
 * of the pattern ends the bytes fed so far) carries from one chunk to the next, so every byte is
 * looked at a bounded number of times, whatever the pattern and the output are. (A search that
 * starts again at every chunk, or at every position a pattern could begin, costs the product of the
 * two lengths; a job controls both.)
 */
export class StreamPattern {
  readonly bytes: Buffer;
  /** `border[l]`: the longest proper prefix of the first `l` bytes that is also their suffix. */
  private readonly border: Int32Array;
  /** How many of the pattern's first bytes end the stream so far (less than its length). */
  state = 0;

  constructor(bytes: Buffer, border?: Int32Array) {
    if (bytes.length === 0) throw new Error('a stream pattern is not empty');
    this.bytes = bytes;
    this.border = border ?? borders(bytes);
  }

  /** The same pattern at the start of a new stream (its table shared). */
  fresh(): StreamPattern {
    return new StreamPattern(this.bytes, this.border);
  }

  get length(): number {
    return this.bytes.length;
  }

  /**
   * Feeds `chunk`; `onMatch(start)` for each occurrence (overlapping ones too) ending in it, `start`
   * being where it begins in the chunk (negative: it began in an earlier one). A chunk at least as
   * long as the pattern is searched natively (`Buffer.indexOf`), with this search only over its first
   * and last `length − 1` bytes (what began before it; what may go on after it); a shorter one with
   * this search alone. Either way a chunk costs about its own length, never the pattern's once more
   * per byte.
   */
  feed(chunk: Buffer, onMatch: (start: number) => void): void {
    const n = this.bytes.length;
    if (chunk.length <= n) {
      this.state = this.run(chunk, 0, chunk.length, this.state, onMatch);
      return;
    }
    // Only what began in an earlier chunk ends in the first n − 1 bytes.
    if (this.state > 0) this.run(chunk, 0, n - 1, this.state, onMatch);
    for (let at = chunk.indexOf(this.bytes); at >= 0; at = chunk.indexOf(this.bytes, at + 1)) onMatch(at);
    // What may go on after the chunk begins in its last n − 1 bytes.
    this.state = this.run(chunk, chunk.length - (n - 1), chunk.length, 0, undefined);
  }

  /** The search over `bytes[from, to)` from state `s`; returns the state after them. */
  private run(bytes: Buffer, from: number, to: number, s: number, onMatch: ((start: number) => void) | undefined): number {
    const p = this.bytes;
    const border = this.border;
    const n = p.length;
    const first = p[0] as number;
    let i = from;
    while (i < to) {
      if (s === 0) {
        const at = bytes.indexOf(first, i);
        if (at < 0 || at >= to) break;
        i = at;
      }
      const c = bytes[i] as number;
      while (s > 0 && p[s] !== c) s = border[s] as number;
      if (p[s] === c) s += 1;
      i += 1;
      if (s === n) {
        onMatch?.(i - n);
        s = border[n] as number;
      }
    }
    return s;
  }

  /**
   * The longest length of a prefix of the pattern that ends the stream, is at most `max`, and is
   * at most `from` (a length the caller had before: the state, or what this returned last). Lengths
   * only shrink, so a caller whose `max` only shrinks walks the chain once in all.
   */
  fit(from: number, max: number): number {
    let l = from;
    while (l > max) l = this.border[l] as number;
    return l;
  }
}

function borders(p: Buffer): Int32Array {
  const border = new Int32Array(p.length + 1);
  let k = 0;
  for (let i = 1; i < p.length; i += 1) {
    while (k > 0 && p[i] !== p[k]) k = border[k] as number;
    if (p[i] === p[k]) k += 1;
    border[i + 1] = k;
  }
  return border;
}
