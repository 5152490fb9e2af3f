/**
 * docs/jobs.md's table of control variables is written from the one table the runner reads
 * (src/agent/job/control-table.ts), so a variable can be neither ignored silently nor documented
 * wrongly. `UPDATE_DOCS=1 npx vitest run test/agent/control-table-docs.test.ts` rewrites it.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CONTROL_VARIABLES } from '../../src/agent/job/control-table.js';

const DOC = new URL('../../docs/jobs.md', import.meta.url);
const START = '<!-- control-variables:start -->';
const END = '<!-- control-variables:end -->';

const cell = (text: string): string => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** The table as Markdown: name, status (with the note or reason), default, what it accepts. */
function rendered(): string {
  const rows = CONTROL_VARIABLES.map((entry) => {
    const { support } = entry;
    const status = support.status === 'honoured' ? (support.note ? `honoured: ${support.note}` : 'honoured') : `${support.status}: ${support.reason}`;
    return `| \`${entry.name}${entry.prefix ? '*' : ''}\` | ${cell(status)} | ${cell(entry.default)} | ${cell(entry.accepts)} |`;
  });
  return ['| variable | ci-runner | default | accepts |', '|---|---|---|---|', ...rows].join('\n');
}

describe('docs/jobs.md', () => {
  it('lists every control variable of the table, as the table says', () => {
    const text = readFileSync(DOC, 'utf8');
    const start = text.indexOf(START);
    const end = text.indexOf(END);
    expect(start, 'docs/jobs.md has the control-variables markers').toBeGreaterThan(0);
    const current = text.slice(start + START.length, end).trim();
    const wanted = rendered();
    if (process.env.UPDATE_DOCS === '1' && current !== wanted) writeFileSync(DOC, `${text.slice(0, start + START.length)}\n${wanted}\n${text.slice(end)}`);
    else expect(current).toBe(wanted);
  });
});
