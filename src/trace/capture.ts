/**
 * Capture: job and runner output → UTF-8 sanitising → secret masking → spool, with the output
 * limit observed on the way. Synchronous end to end, so a write never waits on the network and the
 * bytes are on disk (in the page cache) when `write` returns.
 */
import { Writable } from 'node:stream';
import type { Logger } from '../log/index.js';
import { OutputLimiter } from './limit.js';
import { Masker } from './mask.js';
import type { SpoolWriter } from './spool.js';
import { Utf8Sanitizer } from './utf8.js';

export interface CaptureOptions {
  secrets: readonly string[];
  /** Token prefixes whose tokens are masked (token-prefixes.ts). */
  tokenPrefixes?: readonly string[];
  limitBytes: number;
  spool: Pick<SpoolWriter, 'append'>;
  /** The log just exceeded the limit; the sent trace ends at spool offset `cut`. */
  onCut(cut: number): void;
  /** Bytes were appended to the spool. */
  onData(): void;
  logger: Logger;
}

export class TraceCapture {
  private readonly masker: Masker;
  private readonly limiter: OutputLimiter;
  /** `write()` callers share one sanitiser; each stream has its own, so interleaved stdout and
   *  stderr chunks cannot break each other's multi-byte characters. */
  private readonly direct = new Utf8Sanitizer();
  private readonly open = new Set<Utf8Sanitizer>();
  private ended = false;
  private broken = false;
  private warnedLate = false;

  constructor(private readonly options: CaptureOptions) {
    this.masker = new Masker(options.secrets, { tokenPrefixes: options.tokenPrefixes ?? [] });
    this.limiter = new OutputLimiter(options.limitBytes);
  }

  write(chunk: string | Uint8Array, sanitizer: Utf8Sanitizer = this.direct): void {
    if (this.ended) {
      if (!this.warnedLate) this.options.logger.warn('output written after the trace finished was dropped');
      this.warnedLate = true;
      return;
    }
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    this.append(this.masker.push(sanitizer.push(bytes)));
  }

  /** A new Writable over the trace. Ending it flushes its own pending bytes, not the trace. */
  stream(): Writable {
    const sanitizer = new Utf8Sanitizer();
    this.open.add(sanitizer);
    return new Writable({
      write: (chunk: Buffer, _encoding, callback) => {
        this.write(chunk, sanitizer);
        callback();
      },
      final: (callback) => {
        this.flush(sanitizer);
        callback();
      },
    });
  }

  /** Flushes every sanitiser and the masker's held-back tail; later writes are dropped. */
  end(): void {
    if (this.ended) return;
    this.flush(this.direct);
    for (const sanitizer of [...this.open]) this.flush(sanitizer);
    this.ended = true;
    this.append(this.masker.end());
  }

  private flush(sanitizer: Utf8Sanitizer): void {
    this.open.delete(sanitizer);
    if (this.ended) return;
    this.append(this.masker.push(sanitizer.end()));
  }

  private append(bytes: Buffer): void {
    if (bytes.length === 0 || this.broken) return;
    try {
      this.options.spool.append(bytes);
    } catch (error) {
      // The job keeps running; only its log is lost from here on.
      this.broken = true;
      this.options.logger.error({ err: error }, 'cannot write the job log to its spool file; further output is lost');
      return;
    }
    const cut = this.limiter.observe(bytes);
    if (cut !== undefined) this.options.onCut(cut);
    this.options.onData();
  }
}
