/**
 * Capture: job and runner output → UTF-8 sanitising → secret masking → line stamps (FF_TIMESTAMPS) →
 * spool, with the output limit observed on the way. Synchronous end to end, so a write never waits on
 * the network and the bytes are on disk (in the page cache) when `write` returns.
 *
 * Each stream has a chain of its own (sanitiser, masker, stamper), as each of GitLab Runner's log
 * streams has: the runner's own lines (`write`, stream 00) and each opened one (a stage's output, 01),
 * so interleaved chunks of two streams cannot break each other's characters, a secret held back at the
 * end of one stream's chunk is never completed by another's, and each line is stamped with its own
 * stream. Masking comes before the stamp, so a stamp never splits a secret, and the stamp is whole
 * lines of valid UTF-8, so the limit's character boundary and the v4 checksum see one byte stream.
 */
import { Writable } from 'node:stream';
import type { Logger } from '../log/index.js';
import { OutputLimiter } from './limit.js';
import { Masker } from './mask.js';
import { SectionWatch } from './section-watch.js';
import type { SpoolWriter } from './spool.js';
import { LineStamper, StampedLog, stampClock, type StreamType } from './stamp.js';
import { Utf8Sanitizer } from './utf8.js';

/** GitLab Runner's stream numbers (buildlogger): the runner's own lines, and the job's output. */
export const RUNNER_STREAM = 0;
export const JOB_STREAM = 1;

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
  /** Stamp every line (FF_TIMESTAMPS). */
  timestamps?: boolean;
  /** Follow the log sections opened streams print (the server folds them). */
  sections?: boolean;
}

/** One stream of the trace (a stage's output). */
export interface TraceStream {
  write(chunk: string | Uint8Array): void;
  /**
   * Ends the stream: its held-back bytes go out, its open line is ended. Returns the log sections its
   * output opened and did not close (GitLab's names, innermost first), when sections are followed.
   */
  end(): string[];
}

/** One stream's chain. */
class Chain {
  readonly sanitizer = new Utf8Sanitizer();
  ended = false;

  constructor(
    readonly masker: Masker,
    readonly stamper: LineStamper | undefined,
    readonly sections: SectionWatch | undefined,
  ) {}
}

export class TraceCapture {
  private readonly masker: Masker;
  private readonly limiter: OutputLimiter;
  private readonly log = new StampedLog();
  private readonly runner: Chain;
  private readonly open = new Set<Chain>();
  private ended = false;
  private broken = false;
  private warnedLate = false;

  constructor(private readonly options: CaptureOptions) {
    this.masker = new Masker(options.secrets, { tokenPrefixes: options.tokenPrefixes ?? [] });
    this.limiter = new OutputLimiter(options.limitBytes);
    this.runner = this.chain(RUNNER_STREAM, 'O', false);
  }

  /** Runner output (stream 00). */
  write(chunk: string | Uint8Array): void {
    this.push(this.runner, chunk);
  }

  /** A new stream of the trace (`id` as GitLab Runner numbers them; 01 the job's output). */
  openStream(id = JOB_STREAM, type: StreamType = 'O'): TraceStream {
    const chain = this.chain(id, type, this.options.sections === true);
    this.open.add(chain);
    return {
      write: (chunk) => this.push(chain, chunk),
      end: () => {
        this.flush(chain);
        return chain.sections?.takeOpen() ?? [];
      },
    };
  }

  /** A new stream as a Writable. Ending it flushes its own pending bytes, not the trace. */
  stream(id = JOB_STREAM, type: StreamType = 'O'): Writable {
    const out = this.openStream(id, type);
    return new Writable({
      write: (chunk: Buffer, _encoding, callback) => {
        out.write(chunk);
        callback();
      },
      final: (callback) => {
        out.end();
        callback();
      },
    });
  }

  /** Flushes every stream; later writes are dropped. */
  end(): void {
    if (this.ended) return;
    for (const chain of [...this.open]) this.flush(chain);
    this.flush(this.runner);
    this.ended = true;
  }

  private chain(id: number, type: StreamType, sections: boolean): Chain {
    const stamper = this.options.timestamps ? new LineStamper(this.log, id, type) : undefined;
    return new Chain(this.masker.fork(), stamper, sections ? new SectionWatch() : undefined);
  }

  private push(chain: Chain, chunk: string | Uint8Array): void {
    if (this.ended || chain.ended) {
      if (!this.warnedLate) this.options.logger.warn('output written after the trace finished was dropped');
      this.warnedLate = true;
      return;
    }
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    this.emit(chain, chain.masker.push(chain.sanitizer.push(bytes)));
    // The runner writes whole messages: nothing of one waits for the next (a job's stream may write
    // meanwhile, and the held bytes would follow its output).
    if (chain === this.runner) this.emit(chain, chain.masker.end());
  }

  private flush(chain: Chain): void {
    if (chain.ended || this.ended) return;
    this.open.delete(chain);
    this.emit(chain, chain.masker.push(chain.sanitizer.end()));
    this.emit(chain, chain.masker.end());
    if (chain.stamper) this.append(chain.stamper.end());
    chain.ended = chain !== this.runner;
  }

  private emit(chain: Chain, bytes: Buffer): void {
    if (bytes.length === 0) return;
    chain.sections?.observe(bytes);
    this.append(chain.stamper ? chain.stamper.push(bytes, stampClock()) : bytes);
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
