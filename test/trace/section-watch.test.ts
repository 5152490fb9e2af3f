import { describe, expect, it } from 'vitest';
import { gitlabSectionName, SectionWatch } from '../../src/trace/section-watch.js';

const start = (name: string, options = ''): string => `section_start:1700000000:${name}${options}\r\u001b[0K`;
const end = (name: string): string => `section_end:1700000001:${name}\r\u001b[0K`;

function watch(...chunks: string[]): string[] {
  const w = new SectionWatch();
  for (const chunk of chunks) w.observe(Buffer.from(chunk));
  return w.takeOpen();
}

describe('the sections a job\'s output leaves open', () => {
  it('finds the ones opened and not closed, innermost first, by GitLab\'s names', () => {
    expect(watch(`${start('Outer_One')}text\n${start('inner', '[collapsed=true]')}more\n`)).toEqual(['inner', 'outer-one']);
    expect(watch(`${start('a')}x\n${end('a')}`)).toEqual([]);
    expect(watch(`${start('a')}${start('b')}${end('a')}`)).toEqual(['b']);
  });

  it('follows a marker split across chunks, anywhere in it', () => {
    const marker = start('split-me', '[collapsed=true]');
    for (let cut = 1; cut < marker.length; cut += 1) {
      expect(watch(`before ${marker.slice(0, cut)}`, `${marker.slice(cut)} after\n`)).toEqual(['split-me']);
    }
  });

  it('takes what GitLab takes for a marker, and only that', () => {
    expect(watch('section_start:1:name\r\n')).toEqual([]);
    expect(watch('section_start::name\r\u001b[0K')).toEqual([]);
    expect(watch('section_start:1:na me\r\u001b[0K')).toEqual([]);
    expect(watch('section_start:1:name[bad]\r\u001b[0K')).toEqual([]);
    expect(watch('section_start:1:name[a=1, b=2]\r\u001b[0K')).toEqual(['name']);
    expect(watch('xxsection_start:1:mid\r\u001b[0Kline')).toEqual(['mid']);
  });

  it('names sections as GitLab\'s page does', () => {
    expect(gitlabSectionName('Step_Script.1')).toBe('step-script-1');
  });
});
