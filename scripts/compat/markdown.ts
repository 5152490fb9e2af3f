/**
 * The small Markdown pieces docs/compatibility.md is made of: a table, a status cell, a count line.
 * Nothing here knows a surface; render.ts feeds it rows from the code's own tables.
 */
import type { Support, SupportStatus } from '../../src/util/compat.js';

/** One row of a surface: its name as GitLab Runner (or GitLab) spells it, its Support, more cells. */
export interface Row {
  readonly name: string;
  readonly support: Support;
  readonly cells?: readonly string[];
}

/** A table cell: no line breaks, no bare `|`. */
export function cell(text: string): string {
  return text.replace(/\r?\n/g, ' ').replace(/\|/g, '\\|').trim();
}

export function code(text: string): string {
  return text === '' ? '' : `\`${text}\``;
}

/** "honoured", "warned: reason", "refused: reason" (a note after an honoured entry). */
export function statusCell(support: Support): string {
  switch (support.status) {
    case 'honoured':
      return support.note === undefined ? 'honoured' : `honoured: ${support.note}`;
    case 'warned':
      return `**warned**: ${support.reason}`;
    case 'refused':
      return `**refused**: ${support.reason}`;
  }
}

export function counts(rows: readonly Row[]): Record<SupportStatus, number> {
  const out: Record<SupportStatus, number> = { honoured: 0, warned: 0, refused: 0 };
  for (const row of rows) out[row.support.status] += 1;
  return out;
}

/** A Markdown table whose first column is the name and last the status. */
export function table(header: readonly string[], rows: readonly Row[]): string {
  const head = `| ${[header[0] ?? 'name', ...header.slice(1), 'status'].join(' | ')} |`;
  const rule = `|${' --- |'.repeat(header.length + 1)}`;
  const body = rows.map((row) => `| ${[code(row.name), ...(row.cells ?? []), statusCell(row.support)].map(cell).join(' | ')} |`);
  return [head, rule, ...body].join('\n');
}

/** The anchor GitHub gives a heading: lower case, punctuation but `-` and `_` dropped, spaces as `-`. */
export function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}
