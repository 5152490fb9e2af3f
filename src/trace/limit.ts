/**
 * The output limit (docs/protocol-v1.md §7.1). Once the job's log exceeds `limit` bytes, what is
 * sent stops at a character boundary at or below the limit and one notice line follows; the full log
 * stays on disk. Unlike the legacy runner (which cut at the first boundary at or above the limit), the
 * sent trace never exceeds `limit` + the notice. Output of exactly `limit` bytes gets no notice.
 */

export class OutputLimiter {
  private total = 0;
  /** The last (up to) 3 bytes seen, to find a character boundary that falls just before a chunk. */
  private tail: Buffer = Buffer.alloc(0);
  private cutAt: number | undefined;

  constructor(readonly limit: number) {
    if (!Number.isSafeInteger(limit) || limit < 0) throw new RangeError(`invalid output limit ${limit}`);
  }

  /** Where the sent trace ends, once the log has exceeded the limit. */
  get cut(): number | undefined {
    return this.cutAt;
  }

  /**
   * Observes valid UTF-8 bytes appended to the log. Returns the cut the first time the log exceeds
   * the limit, `undefined` otherwise.
   */
  observe(chunk: Uint8Array): number | undefined {
    const start = this.total;
    this.total += chunk.byteLength;
    if (this.cutAt !== undefined) return undefined;
    if (this.total <= this.limit) {
      this.remember(chunk);
      return undefined;
    }
    const byteAt = (position: number): number =>
      position >= start
        ? (chunk[position - start] as number)
        : (this.tail[this.tail.length - (start - position)] as number);
    let cut = this.limit;
    // A continuation byte at `cut` means a character straddles the limit: cut before it.
    while (cut > 0 && cut >= start - this.tail.length && (byteAt(cut) & 0xc0) === 0x80) cut--;
    this.cutAt = cut;
    return cut;
  }

  private remember(chunk: Uint8Array): void {
    const joined = Buffer.concat([this.tail, chunk.subarray(Math.max(0, chunk.byteLength - 3))]);
    this.tail = Buffer.from(joined.subarray(Math.max(0, joined.length - 3)));
  }
}

/** The notice line that ends a trace cut by the limit (bold red, like the legacy runner's). */
export function limitNotice(limit: number, fullLogPath: string): string {
  return (
    `\n\u001b[31;1mJob's log exceeded limit of ${limit} bytes: the rest was not sent. ` +
    `The full log is kept on the runner at ${fullLogPath}\u001b[0;m\n`
  );
}
