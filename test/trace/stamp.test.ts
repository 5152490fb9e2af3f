import { describe, expect, it } from 'vitest';
import { LineStamper, StampedLog, STAMP_LENGTH } from '../../src/trace/stamp.js';

const AT = Date.UTC(2025, 0, 31, 12, 34, 56) + 123.456;
const TS = '2025-01-31T12:34:56.123456Z';

function stampers() {
  const log = new StampedLog();
  return { log, job: new LineStamper(log, 1, 'O'), runner: new LineStamper(log, 0, 'O') };
}

const text = (parts: Buffer[]): string => Buffer.concat(parts).toString('utf8');

describe('line stamps (GitLab Runner 19 FF_TIMESTAMPS)', () => {
  it('starts every line with the time to the microsecond, the stream, its type and the line type', () => {
    const { job } = stampers();
    const out = text([job.push(Buffer.from('one\ntwo\n'), AT)]);
    expect(out).toBe(`${TS} 01O one\n${TS} 01O two\n`);
    expect(`${TS} 01O `).toHaveLength(STAMP_LENGTH);
  });

  it('writes a line\'s header with its first byte and the rest as it comes, without a second header', () => {
    const { job } = stampers();
    const out = [job.push(Buffer.from('progress'), AT), job.push(Buffer.from(' done\nnext'), AT + 1000), job.end()];
    expect(text(out)).toBe(`${TS} 01O progress done\n2025-01-31T12:34:57.123456Z 01O next\n`);
  });

  it('ends a write with a carriage return and no newline at once, and continues its line as `+`', () => {
    const { job } = stampers();
    const out = [job.push(Buffer.from('10%\r'), AT), job.push(Buffer.from('20%\r'), AT), job.push(Buffer.from('done\n'), AT)];
    expect(text(out)).toBe(`${TS} 01O 10%\r\n${TS} 01O+20%\r\n${TS} 01O+done\n`);
  });

  it('cuts a line longer than 8 KiB without a newline into `+` pieces', () => {
    const { job } = stampers();
    const first = job.push(Buffer.from('a'.repeat(5000)), AT);
    const second = job.push(Buffer.from('b'.repeat(5000)), AT);
    const third = job.push(Buffer.from('c\n'), AT);
    expect(text([first, second, third])).toBe(`${TS} 01O ${'a'.repeat(5000)}${'b'.repeat(5000)}\n${TS} 01O+c\n`);
  });

  it('ends the line another stream interrupts, and goes on with a line of its own rather than a `+` of the other\'s', () => {
    const { job, runner } = stampers();
    const out = [job.push(Buffer.from('half'), AT), runner.push(Buffer.from('runner line\n'), AT), job.push(Buffer.from(' rest\n'), AT)];
    expect(text(out)).toBe(`${TS} 01O half\n${TS} 00O runner line\n${TS} 01O  rest\n`);
  });

  it('does not make a piece of one stream a `+` of another stream\'s line', () => {
    const { job, runner } = stampers();
    const out = [job.push(Buffer.from('10%\r'), AT), runner.push(Buffer.from('section_start:1:x\r\u001b[0K'), AT), job.push(Buffer.from('20%\n'), AT)];
    expect(text(out)).toBe(`${TS} 01O 10%\r\n${TS} 00O section_start:1:x\r\u001b[0K\n${TS} 01O 20%\n`);
  });

  it('ends the stream\'s open line at its end, and nothing more when none is open', () => {
    const { job } = stampers();
    expect(text([job.push(Buffer.from('last'), AT), job.end(), job.end()])).toBe(`${TS} 01O last\n`);
  });

  it('stamps many short lines of one chunk exactly as one at a time', () => {
    const lines = Array.from({ length: 500 }, (_, i) => `line ${i}\n`).join('');
    const whole = stampers().job.push(Buffer.from(lines), AT).toString();
    const one = stampers();
    const byLine = lines.split(/(?<=\n)/).map((line) => one.job.push(Buffer.from(line), AT).toString()).join('');
    expect(whole).toBe(byLine);
    expect(whole.split('\n').filter(Boolean).every((line) => line.startsWith(`${TS} 01O line `))).toBe(true);
  });
});
