/**
 * A JUnit XML report read into counts, as GitLab's test report shows them: every `<testcase>` is one
 * test — failed when it holds a `<failure>` or an `<error>`, skipped when it holds a `<skipped>`,
 * passed otherwise. The report is streamed (sax) from the uploaded file (several XML documents one
 * after another, gzip members or plain), so memory stays flat whatever its size; what is read is
 * bounded, and so is the list of failed test names kept.
 */
import { createReadStream } from 'node:fs';
import { createGunzip } from 'node:zlib';
import type { Readable } from 'node:stream';

export interface TestSummary {
  total: number;
  passed: number;
  failed: number;
  skipped: number;
  /** The first failed tests, `classname.name` (at most `MAX_FAILED_NAMES`). */
  failedNames: string[];
}

/** Names kept of failed tests: enough for a summary line, bounded for a report of thousands. */
export const MAX_FAILED_NAMES = 20;
/** Report characters read (after gunzip) at most; GitLab's own limit for a JUnit report is of this order. */
export const MAX_JUNIT_BYTES = 64 * 1024 * 1024;

export class JunitError extends Error {}

/** Reads the JUnit report at `path` (`gzip`ped members, or plain XML). */
export async function readJunit(path: string, gzipped: boolean, signal?: AbortSignal): Promise<TestSummary> {
  const { default: sax } = await import('sax');
  const summary: TestSummary = { total: 0, passed: 0, failed: 0, skipped: 0, failedNames: [] };
  let current: { name: string; outcome: 'passed' | 'failed' | 'skipped' } | undefined;
  const close = (): void => {
    if (!current) return;
    summary.total += 1;
    summary[current.outcome] += 1;
    if (current.outcome === 'failed' && summary.failedNames.length < MAX_FAILED_NAMES) summary.failedNames.push(current.name);
    current = undefined;
  };
  const parser = sax.createStream(false, { lowercase: true });
  parser.on('opentag', (tag) => {
    const attr = (key: string): string => String(tag.attributes[key] ?? '');
    if (tag.name === 'testcase') {
      close();
      const name = [attr('classname'), attr('name')].filter((part) => part !== '').join('.');
      current = { name: name === '' ? '(unnamed test)' : name, outcome: 'passed' };
    } else if (current && (tag.name === 'failure' || tag.name === 'error')) current.outcome = 'failed';
    else if (current && tag.name === 'skipped' && current.outcome !== 'failed') current.outcome = 'skipped';
  });
  parser.on('closetag', (name) => {
    if (name === 'testcase') close();
  });
  // Non-strict sax tolerates what test tools write; an unparseable report still counts what it read.
  parser.on('error', () => {
    (parser._parser as unknown as { error: Error | null }).error = null;
    parser._parser.resume();
  });
  const source: Readable = createReadStream(path, signal ? { signal } : {});
  const text = gzipped ? source.pipe(createGunzip()) : source;
  let bytes = 0;
  text.setEncoding('utf8');
  await new Promise<void>((resolve, reject) => {
    text.on('data', (chunk: string) => {
      bytes += chunk.length;
      if (bytes > MAX_JUNIT_BYTES) {
        text.destroy();
        reject(new JunitError(`the JUnit report is over ${MAX_JUNIT_BYTES / 1024 / 1024} MiB; it was not read`));
        return;
      }
      // Several documents one after another (one per report file): non-strict sax reads on.
      parser.write(chunk);
    });
    text.on('end', () => resolve());
    text.on('error', reject);
    source.on('error', reject);
  });
  parser.end();
  close();
  return summary;
}
