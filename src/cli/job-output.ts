/**
 * What `run-once` tells the person or orchestrator watching it about each job: where its log can be
 * read, and with `--show-log` the log itself as it is written, masked the way the coordinator gets
 * it (the terminal is often another CI system's log, so a secret must not reach it either).
 */
import { StringDecoder } from 'node:string_decoder';
import type { BuildPayload } from '../protocol/types.js';
import { Masker } from '../trace/mask.js';
import { collectSecrets } from '../trace/secrets.js';
import { tokenPrefixes } from '../trace/token-prefixes.js';

/**
 * The job's page: the CI_JOB_URL the coordinator sent, else GitLab's `<project URL>/-/jobs/<id>`,
 * else the coordinator and job id.
 */
export function jobLogLocation(build: BuildPayload, coordinatorUrl: string): string {
  const variable = (key: string): string | undefined => build.variables.find((v) => v.key === key && v.value !== '')?.value;
  const jobUrl = variable('CI_JOB_URL');
  if (jobUrl) return jobUrl;
  const projectUrl = variable('CI_PROJECT_URL');
  if (projectUrl) return `${projectUrl.replace(/\/+$/, '')}/-/jobs/${build.id}`;
  return `job ${build.id} on ${coordinatorUrl}`;
}

/** A line longer than this is written without waiting for its end (memory stays bounded). */
const MAX_PARTIAL = 64 * 1024;

interface JobStream {
  masker: Masker;
  /** Keeps a character split between chunks whole, when lines are prefixed. */
  decoder: StringDecoder;
  /** The unfinished last line, when lines are prefixed. */
  partial: string;
}

/**
 * Copies jobs' output to `out`, masked. With several jobs at once every line is prefixed with
 * `[job N]` and only whole lines are written, so jobs do not interleave within a line.
 */
export class JobLogTee {
  private readonly jobs = new Map<number, JobStream>();

  constructor(
    private readonly out: NodeJS.WritableStream,
    private readonly runnerToken: string,
    private readonly prefixed: boolean,
  ) {}

  write(build: BuildPayload, chunk: string | Uint8Array): void {
    let stream = this.jobs.get(build.id);
    if (!stream) {
      stream = { masker: new Masker(collectSecrets(build, this.runnerToken), { tokenPrefixes: tokenPrefixes(build).prefixes }), decoder: new StringDecoder('utf8'), partial: '' };
      this.jobs.set(build.id, stream);
    }
    this.emit(build.id, stream, stream.masker.push(Buffer.from(chunk)), false);
  }

  /** Writes what was held back (a possible start of a secret, an unfinished line). */
  end(buildId: number): void {
    const stream = this.jobs.get(buildId);
    if (!stream) return;
    this.jobs.delete(buildId);
    this.emit(buildId, stream, stream.masker.end(), true);
  }

  private emit(buildId: number, stream: JobStream, bytes: Buffer, final: boolean): void {
    if (!this.prefixed) {
      if (bytes.length > 0) this.out.write(bytes);
      return;
    }
    const text = stream.decoder.write(bytes) + (final ? stream.decoder.end() : '');
    const lines = `${stream.partial}${text}`.split('\n');
    stream.partial = lines.pop() ?? '';
    if (final || stream.partial.length > MAX_PARTIAL) {
      if (stream.partial !== '') lines.push(stream.partial);
      stream.partial = '';
    }
    for (const line of lines) this.out.write(`[job ${buildId}] ${line}\n`);
  }
}
