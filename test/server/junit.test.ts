/**
 * The JUnit reader behind exec's test summary and the web page's tests (src/server/state/junit.ts):
 * GitLab's reading of test cases (failure and error fail, skipped skips), several documents and gzip
 * members in one upload, what test tools write that is not quite XML — and hostile reports: huge,
 * deeply nested, entity bombs, terminal escapes in names. Each is bounded.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JunitError, MAX_FAILED_NAMES, readJunit } from '../../src/server/state/junit.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ci-runner-junit-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

let count = 0;
async function report(content: string | Buffer): Promise<string> {
  const path = join(dir, `report-${(count += 1)}.xml`);
  await writeFile(path, content);
  return path;
}

const SUITE = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites>
  <testsuite name="math" tests="5">
    <testcase classname="math" name="adds" time="0.1"/>
    <testcase classname="math" name="divides"><failure message="expected 2">1 != 2</failure></testcase>
    <testcase classname="math" name="roots"><error type="ZeroDivision"/></testcase>
    <testcase classname="math" name="later"><skipped/></testcase>
    <testcase name="no class"><system-out>fine</system-out></testcase>
  </testsuite>
</testsuites>
`;

describe('readJunit', () => {
  it('counts passed, failed (failure or error) and skipped test cases and names the failed ones', async () => {
    expect(await readJunit(await report(SUITE), false)).toEqual({ total: 5, passed: 2, failed: 2, skipped: 1, failedNames: ['math.divides', 'math.roots'] });
  });

  it('reads every document of an upload of several reports, plain or as gzip members', async () => {
    const twice = Buffer.concat([Buffer.from(SUITE), Buffer.from(SUITE)]);
    expect((await readJunit(await report(twice), false)).total).toBe(10);
    const members = Buffer.concat([gzipSync(SUITE), gzipSync(SUITE.replace('name="adds"', 'name="subtracts"'))]);
    expect(await readJunit(await report(members), true)).toMatchObject({ total: 10, passed: 4, failed: 4, skipped: 2 });
  });

  it('counts what it can of a report that is not well-formed', async () => {
    const broken = '<testsuite><testcase name="a"><failure>x < y & z</failure></testcase><testcase name="b"></testsuite><testcase name="c"/>';
    expect(await readJunit(await report(broken), false)).toMatchObject({ total: 3, passed: 2, failed: 1, failedNames: ['a'] });
  });

  it(`keeps ${MAX_FAILED_NAMES} failed names however many fail, each cut short and without terminal escapes`, async () => {
    const cases = Array.from({ length: 500 }, (_, i) => `<testcase classname="c" name="t${i}\u001b[31m${'x'.repeat(i === 0 ? 5000 : 1)}"><failure/></testcase>`).join('');
    const summary = await readJunit(await report(`<testsuite>${cases}</testsuite>`), false);
    expect(summary).toMatchObject({ total: 500, failed: 500 });
    expect(summary.failedNames).toHaveLength(MAX_FAILED_NAMES);
    expect(summary.failedNames.every((name) => !name.includes('\u001b'))).toBe(true);
    expect(summary.failedNames[0]!.length).toBeLessThanOrEqual(200);
  });

  it('refuses a report past its size bound, without reading it into memory', async () => {
    const big = `<testsuite>${'<testcase name="t"/>'.repeat(20_000)}</testsuite>`;
    await expect(readJunit(await report(big), false, undefined, { maxBytes: 100_000 })).rejects.toThrow(JunitError);
    await expect(readJunit(await report(gzipSync(big)), true, undefined, { maxBytes: 100_000 })).rejects.toThrow(/over 0\.10 MiB/);
    expect((await readJunit(await report(big), false)).total).toBe(20_000);
  });

  it('refuses elements nested past its depth bound (the parser keeps a stack of them)', async () => {
    const deep = `<testsuite>${'<a>'.repeat(100_000)}<testcase name="t"/></testsuite>`;
    await expect(readJunit(await report(deep), false)).rejects.toThrow(/nests elements more than 256 deep/);
    const fine = `<testsuites><testsuite><testsuite><testcase name="t"><failure/></testcase></testsuite></testsuite></testsuites>`;
    expect((await readJunit(await report(fine), false)).failed).toBe(1);
  });

  it('does not expand entities a report declares ("billion laughs")', async () => {
    const lol = [
      '<?xml version="1.0"?>',
      '<!DOCTYPE lolz [',
      '<!ENTITY lol "lol">',
      ...Array.from({ length: 9 }, (_, i) => `<!ENTITY lol${i + 1} "${`&lol${i === 0 ? '' : i};`.repeat(10)}">`),
      ']>',
      '<testsuite><testcase classname="&lol9;" name="bomb"><failure>&lol9;</failure></testcase></testsuite>',
    ].join('\n');
    const before = process.memoryUsage().heapUsed;
    const summary = await readJunit(await report(lol), false);
    expect(summary).toMatchObject({ total: 1, failed: 1 });
    expect(summary.failedNames[0]!.length).toBeLessThan(50);
    expect(process.memoryUsage().heapUsed - before).toBeLessThan(50 * 1024 * 1024);
  });
});
