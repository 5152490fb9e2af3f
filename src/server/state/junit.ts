/**
 * A JUnit XML report read into counts, as GitLab's test report shows them: every `<testcase>` is one
 * test — failed when it holds a `<failure>` or an `<error>`, skipped when it holds a `<skipped>`,
 * passed otherwise. The report is streamed (sax) from the uploaded file (several XML documents one
 * after another, gzip members or plain), so memory stays flat whatever its size; what is read is
 * bounded (characters, and how deep elements nest: the parser keeps a stack of open elements), and so
 * is the list of failed test names kept. Entities a document declares are not expanded (sax reads no
 * DTD), so a "billion laughs" report is a few kilobytes of text.
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
/** Characters kept of a failed test's name. */
const MAX_NAME = 200;

/** A name as a summary line shows it: control characters (a terminal's escapes) blanked, cut at MAX_NAME. */
function shownName(name: string): string {
  const clean = name.replace(/[\u0000-\u001f\u007f-\u009f]/g, ' ');
  return clean.length > MAX_NAME ? `${clean.slice(0, MAX_NAME - 1)}…` : clean;
}
/** Report characters read (after gunzip) at most; GitLab's own limit for a JUnit report is of this order. */
export const MAX_JUNIT_BYTES = 64 * 1024 * 1024;
/** Elements open at once at most: a JUnit report nests four or five deep (suites, case, failure). */
export const MAX_JUNIT_DEPTH = 256;

export class JunitError extends Error {}

/** Reads the JUnit report at `path` (`gzip`ped members, or plain XML); `limits` lowers the bounds (tests). */
export async function readJunit(path: string, gzipped: boolean, signal?: AbortSignal, limits: { maxBytes?: number; maxDepth?: number } = {}): Promise<TestSummary> {
  const { maxBytes = MAX_JUNIT_BYTES, maxDepth = MAX_JUNIT_DEPTH } = limits;
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
  let depth = 0;
  let tooDeep = false;
  parser.on('opentag', (tag) => {
    depth += 1;
    if (depth > maxDepth) tooDeep = true;
    const attr = (key: string): string => String(tag.attributes[key] ?? '');
    if (tag.name === 'testcase') {
      close();
      const name = [attr('classname'), attr('name')].filter((part) => part !== '').join('.');
      current = { name: name === '' ? '(unnamed test)' : shownName(name), outcome: 'passed' };
    } else if (current && (tag.name === 'failure' || tag.name === 'error')) current.outcome = 'failed';
    else if (current && tag.name === 'skipped' && current.outcome !== 'failed') current.outcome = 'skipped';
  });
  parser.on('closetag', (name) => {
    depth -= 1;
    if (name === 'testcase') close();
  });
  // Non-strict sax tolerates what test tools write; an unparseable report still counts what it read.
  parser.on('error', () => {
    (parser._parser as unknown as { error: Error | null }).error = null;
    parser._parser.resume();
  });
  // One element around everything: non-strict sax reads nothing after a document's root closes, and an
  // upload holds one document per report file (gzip members or plain, one after another).
  parser.write('<ci-runner-reports>');
  const source: Readable = createReadStream(path, signal ? { signal } : {});
  const text = gzipped ? source.pipe(createGunzip()) : source;
  let bytes = 0;
  text.setEncoding('utf8');
  await new Promise<void>((resolve, reject) => {
    text.on('data', (chunk: string) => {
      bytes += chunk.length;
      if (bytes > maxBytes) {
        text.destroy();
        reject(new JunitError(`the JUnit report is over ${(maxBytes / 1024 / 1024).toFixed(maxBytes < 1024 * 1024 ? 2 : 0)} MiB; it was not read`));
        return;
      }
      parser.write(chunk);
      if (tooDeep) {
        text.destroy();
        reject(new JunitError(`the JUnit report nests elements more than ${maxDepth} deep; it was not read`));
      }
    });
    text.on('end', () => resolve());
    text.on('error', reject);
    source.on('error', reject);
  });
  parser.end();
  close();
  return summary;
}
