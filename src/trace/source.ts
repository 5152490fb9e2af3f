/**
 * A trace as the final update and the sender read it: its length in bytes, its bytes, its text. The
 * job's spool view (view.ts) is one; a short text held in memory (a job that never ran) another.
 */

export interface TraceSource {
  readonly length: number;
  read(start: number, end: number): Promise<Uint8Array>;
  text(length: number): AsyncIterable<string>;
}

/** A short trace held in memory (a job that never ran has only a few lines to say why). */
export function textTrace(text: string): TraceSource {
  const bytes = Buffer.from(text);
  return {
    length: bytes.length,
    read: (start, end) => Promise.resolve(bytes.subarray(start, end)),
    async *text() {
      yield text;
    },
  };
}
