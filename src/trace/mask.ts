/**
 * Secret masking before bytes reach the spool. Each occurrence of a secret becomes `[MASKED]`.
 *
 * Contract: the output does not depend on how the input was split into chunks. At each position the
 * earliest match wins, and among secrets matching there the longest; matching resumes after it. A
 * position near the end of a chunk is undecided only while the bytes from it to the end are a proper
 * prefix of some secret (more output could complete a match there); from the first such position the
 * bytes are held back until more output arrives or `end()` is called. So at most `maxLength − 1`
 * bytes are held, and usually none: ordinary output is not delayed. The masker works on bytes (the
 * secrets' UTF-8 encodings) and runs after UTF-8 sanitising, so both sides use the same encoding.
 */

export const MASK = '[MASKED]';
const MASK_BYTES = Buffer.from(MASK);
const EMPTY = Buffer.alloc(0);

export class Masker {
  /** Longest first, so that a tie at one position picks the longest secret. */
  private readonly secrets: Buffer[];
  private readonly maxLength: number;
  /**
   * For each byte value `b`, pairs (secret index, k) with `secret[k − 1] === b` and `k` shorter than
   * the secret: output ending in `b` can end with the first `k` bytes of that secret. Finding the
   * undecided tail then costs one check per pair instead of one per (position, secret), which keeps
   * many secrets (every line of a key) or a long one as cheap as a few tokens.
   */
  private readonly prefixEnds: Uint32Array[];
  private held: Buffer = EMPTY;

  constructor(secrets: readonly string[], from?: Masker) {
    if (from) {
      this.secrets = from.secrets;
      this.maxLength = from.maxLength;
      this.prefixEnds = from.prefixEnds;
      return;
    }
    const unique = [...new Set(secrets.filter((secret) => secret.length > 0))];
    this.secrets = unique.map((secret) => Buffer.from(secret)).sort((a, b) => b.length - a.length);
    this.maxLength = this.secrets[0]?.length ?? 0;
    this.prefixEnds = prefixEndTable(this.secrets);
  }

  /** A masker of the same secrets with a state of its own (one per stream), sharing the tables. */
  fork(): Masker {
    return new Masker([], this);
  }

  /** Masks what can be decided so far; holds back at most `maxLength − 1` bytes. */
  push(chunk: Buffer): Buffer {
    if (this.secrets.length === 0) return chunk;
    const data = this.held.length > 0 ? Buffer.concat([this.held, chunk]) : chunk;
    return this.mask(data, false);
  }

  /** Releases the held-back tail, masked. */
  end(): Buffer {
    const data = this.held;
    this.held = EMPTY;
    return data.length === 0 ? EMPTY : this.mask(data, true);
  }

  private mask(data: Buffer, final: boolean): Buffer {
    const secrets = this.secrets;
    const undecided = final ? [] : this.undecidedPositions(data);
    const next = secrets.map((secret) => data.indexOf(secret));
    const parts: Buffer[] = [];
    let position = 0;
    let hold = 0; // index into `undecided` of the first undecided position at or after `position`
    for (;;) {
      let found = -1;
      let which = -1;
      for (let i = 0; i < next.length; i++) {
        const at = next[i] as number;
        // Equal positions keep the earlier (longer) secret.
        if (at >= 0 && (found < 0 || at < found)) {
          found = at;
          which = i;
        }
      }
      while (hold < undecided.length && (undecided[hold] as number) < position) hold++;
      const decidedBefore = undecided[hold] ?? data.length;
      if (found < 0 || found >= decidedBefore) break;
      parts.push(data.subarray(position, found), MASK_BYTES);
      position = found + (secrets[which] as Buffer).length;
      for (let i = 0; i < next.length; i++) {
        const at = next[i] as number;
        if (at >= 0 && at < position) next[i] = data.indexOf(secrets[i] as Buffer, position);
      }
    }
    while (hold < undecided.length && (undecided[hold] as number) < position) hold++;
    const emitEnd = undecided[hold] ?? data.length;
    parts.push(data.subarray(position, emitEnd));
    this.held = emitEnd < data.length ? Buffer.from(data.subarray(emitEnd)) : EMPTY;
    return parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts);
  }

  /** Ascending positions whose bytes up to the end are a proper prefix of some secret. */
  private undecidedPositions(data: Buffer): number[] {
    const length = data.length;
    if (length === 0) return [];
    const pairs = this.prefixEnds[data[length - 1] as number] as Uint32Array;
    const positions: number[] = [];
    for (let p = 0; p < pairs.length; p += 2) {
      const secret = this.secrets[pairs[p] as number] as Buffer;
      const k = pairs[p + 1] as number;
      const at = length - k;
      if (at < 0 || data[at] !== secret[0]) continue;
      if (secret.compare(data, at, length, 0, k) === 0) positions.push(at);
    }
    if (positions.length > 1) positions.sort((a, b) => a - b);
    return positions;
  }
}

/** The table's entry for a byte no secret holds (short of its last byte): most of the 256. */
const NO_PAIRS = new Uint32Array(0);

function prefixEndTable(secrets: readonly Buffer[]): Uint32Array[] {
  const pairs: (number[] | undefined)[] = new Array<number[] | undefined>(256).fill(undefined);
  secrets.forEach((secret, index) => {
    for (let k = 1; k < secret.length; k++) (pairs[secret[k - 1] as number] ??= []).push(index, k);
  });
  // One shared empty array: a job masks a few tokens, and 256 typed arrays of its own cost it ~60 KB.
  return pairs.map((list) => (list ? Uint32Array.from(list) : NO_PAIRS));
}
