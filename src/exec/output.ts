/**
 * What `exec` prints: the jobs' live logs as `demo` shows them (a header per job; with more than one
 * job at a time, whole lines prefixed with the job's name, since chunks need not end at line ends),
 * the summary table and the `--list` table. Colour only when asked (a terminal); otherwise the ANSI
 * codes of the job logs are taken out.
 */
import { stripVTControlCharacters } from 'node:util';
import type { JobSpec } from '../pipeline/spec.js';
import { needsOf } from './select.js';

export type Paint = (code: string, text: string) => string;

export interface Printer {
  paint: Paint;
  print(text: string): void;
}

/** A log section's marker: a terminal erases it (`\r\e[0K`), a file or pipe would keep it as text. */
const SECTION_MARKER = /section_(?:start|end):\d+:[A-Za-z0-9_.-]+(?:\[[^\]\r\n]*\])?\r\u001b\[0K/g;

/** A printer writing to `out`; nothing is written once `signal` is aborted (a closed pipe). */
export function createPrinter(out: NodeJS.WritableStream, color: boolean, signal: AbortSignal): Printer {
  return {
    paint: (code, text) => (color ? `\u001b[${code}m${text}\u001b[0m` : text),
    print: (text) => {
      if (!signal.aborted) out.write(color ? text : stripVTControlCharacters(text.replace(SECTION_MARKER, '')));
    },
  };
}

/** Turns runner output chunks into printed lines, one job or several at once. */
export class LiveLog {
  private readonly names = new Map<number, string>();
  private readonly partial = new Map<number, string>();

  constructor(
    private readonly printer: Printer,
    private readonly prefixed: boolean,
  ) {}

  started(id: number, name: string, stage: string): void {
    this.names.set(id, name);
    this.printer.print(`\n${this.printer.paint('1;36', `━━━ job #${id} ${name} (stage ${stage}) ━━━`)}\n`);
  }

  output(id: number, chunk: string | Uint8Array): void {
    const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
    if (!this.prefixed) {
      this.printer.print(text);
      return;
    }
    const lines = `${this.partial.get(id) ?? ''}${text}`.split('\n');
    this.partial.set(id, lines.pop() ?? '');
    for (const line of lines) this.printer.print(`${this.prefix(id)}${line}\n`);
  }

  finished(id: number): void {
    const rest = this.partial.get(id);
    if (rest) this.printer.print(`${this.prefix(id)}${rest}\n`);
    this.partial.delete(id);
  }

  private prefix(id: number): string {
    return `${this.printer.paint('2', `[${this.names.get(id) ?? id}]`)} `;
  }
}

export interface SummaryRow {
  name: string;
  stage: string;
  status: string;
  allowFailure: boolean;
  startedAt: string | null;
  finishedAt: string | null;
}

/** Columns padded to their widest cell, two spaces apart; `colour` picks a row's paint. */
function table(head: string[], rows: string[][], paint: Paint, colour: (row: string[]) => { column: number; code: string } | undefined): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[], painted?: { column: number; code: string }): string =>
    cells
      .map((cell, i) => {
        const padded = cell.padEnd(i === cells.length - 1 ? 0 : (widths[i] ?? 0));
        return painted?.column === i ? padded.replace(cell, paint(painted.code, cell)) : padded;
      })
      .join('  ')
      .trimEnd();
  return [paint('1', line(head)), ...rows.map((row) => line(row, colour(row)))].join('\n');
}

/** The status as a user reads it: a failure the job allows is "failed (allowed)". */
export function statusText(row: Pick<SummaryRow, 'status' | 'allowFailure'>): string {
  return row.status === 'failed' && row.allowFailure ? 'failed (allowed)' : row.status;
}

/** JOB, STAGE, STATUS, DURATION. */
export function summaryTable(rows: readonly SummaryRow[], paint: Paint): string {
  const cells = rows.map((row) => {
    const ms = row.startedAt && row.finishedAt ? Date.parse(row.finishedAt) - Date.parse(row.startedAt) : undefined;
    return [row.name, row.stage, statusText(row), ms === undefined ? '-' : `${(ms / 1000).toFixed(1)} s`];
  });
  return table(['JOB', 'STAGE', 'STATUS', 'DURATION'], cells, paint, (row) => {
    const status = row[2] ?? '';
    const code = status === 'success' ? '32' : status === 'failed' ? '31' : '33';
    return { column: 2, code };
  });
}

/** `exec --list`: JOB, STAGE, WHEN, NEEDS — the jobs that would run, in stage order. */
export function listTable(jobs: readonly JobSpec[], stages: readonly string[], paint: Paint): string {
  const ordered = [...jobs].sort((a, b) => stages.indexOf(a.stage) - stages.indexOf(b.stage));
  const cells = ordered.map((job) => {
    const needs = needsOf(job);
    const needsText = needs === undefined ? '-' : needs.length === 0 ? '[] (starts at once)' : needs.map((n) => `${n.job}${n.artifacts ? '' : ' (no artifacts)'}${n.optional ? ' (optional)' : ''}`).join(', ');
    const when = `${job.when}${job.allowFailure ? ' (allow failure)' : ''}`;
    return [job.name, job.stage, when, needsText];
  });
  return table(['JOB', 'STAGE', 'WHEN', 'NEEDS'], cells, paint, () => undefined);
}

/** One job's reports as `exec` shows them after the summary (from the server's job view). */
export interface ReportRow {
  name: string;
  tests?: { total: number; passed: number; failed: number; skipped: number; failed_names: string[] };
  coverage?: number | null;
  reports?: Array<{ type: string; filename: string; size: number }>;
}

/**
 * The test summary beside the job table: JOB, PASSED, FAILED, SKIPPED and COVERAGE for the jobs with a
 * JUnit report or a coverage figure, the failed tests' names under it, and the other reports each job
 * kept. Empty when no job has any.
 */
export function reportsSummary(rows: readonly ReportRow[], paint: Paint): string {
  const counted = rows.filter((row) => row.tests !== undefined || (row.coverage !== undefined && row.coverage !== null));
  const lines: string[] = [];
  if (counted.length > 0) {
    const cells = counted.map((row) => {
      const t = row.tests;
      return [row.name, t ? String(t.passed) : '-', t ? String(t.failed) : '-', t ? String(t.skipped) : '-', row.coverage === undefined || row.coverage === null ? '-' : `${row.coverage}%`];
    });
    lines.push(table(['TESTS OF', 'PASSED', 'FAILED', 'SKIPPED', 'COVERAGE'], cells, paint, (row) => (row[2] !== '-' && row[2] !== '0' ? { column: 2, code: '31' } : undefined)));
    for (const row of counted) {
      const failed = row.tests?.failed_names ?? [];
      if (failed.length === 0) continue;
      const more = (row.tests?.failed ?? 0) - failed.length;
      lines.push(`${paint('31', `Failed tests of ${row.name}`)}: ${failed.join(', ')}${more > 0 ? ` and ${more} more` : ''}`);
    }
  }
  for (const row of rows) {
    const kept = (row.reports ?? []).filter((report) => report.type !== 'junit' || row.tests === undefined);
    if (kept.length > 0) lines.push(`Reports of ${row.name}: ${kept.map((report) => `${report.type} (${report.filename}, ${report.size} bytes)`).join(', ')}`);
  }
  return lines.join('\n');
}
