/** Pure helpers of the reference server: durations, sizes, fault flags, Content-Range, masking, statuses. */
import { describe, expect, it } from 'vitest';
import { parseContentRange } from '../../src/server/api/trace.js';
import { expiryFrom } from '../../src/server/api/artifacts.js';
import { parseDurationMs, parseDurationSeconds } from '../../src/util/duration.js';
import { parseFaultFlag } from '../../src/server/faults.js';
import { parseByteSize } from '../../src/server/sizes.js';
import { maskSecrets } from '../../src/server/state/traces.js';
import { refSlug } from '../../src/pipeline/predefined.js';
import { safeFilename } from '../../src/server/state/artifacts.js';

describe('human durations (expire_in)', () => {
  it.each([
    ['3 mins 4 sec', 184],
    ['2 hrs 20 min', 8400],
    ['2h20min', 8400],
    ['6 mos 1 day', 181 * 86_400],
    ['47 yrs 6 mos and 4d', 47 * 365.25 * 86_400 + 180 * 86_400 + 4 * 86_400],
    ['3 weeks and 2 days', 23 * 86_400],
    ['1 week', 604_800],
    ['1+week', 604_800],
    ['7d', 604_800],
    ['90', 90],
    ['1 hour, 30 minutes', 5400],
    ['30s', 30],
  ])('parses %j', (text, seconds) => {
    expect(parseDurationSeconds(text)).toBeCloseTo(seconds, 3);
  });

  it.each(['', 'soon', '3 parsecs', '1 week later', 'week'])('refuses %j', (text) => {
    expect(parseDurationSeconds(text)).toBeUndefined();
  });

  it('reads flag durations in milliseconds', () => {
    expect(parseDurationMs('30s')).toBe(30_000);
    expect(parseDurationMs('60m')).toBe(3_600_000);
    expect(parseDurationMs('1500ms')).toBe(1500);
    expect(parseDurationMs('0')).toBe(0);
    expect(parseDurationMs('x')).toBeUndefined();
  });

  it('treats absent, empty and never as no expiry', () => {
    expect(expiryFrom(undefined)).toBeNull();
    expect(expiryFrom('')).toBeNull();
    expect(expiryFrom('never')).toBeNull();
    expect(expiryFrom('1 day', 0)?.getTime()).toBe(86_400_000);
    expect(expiryFrom('whenever')).toBeUndefined();
  });
});

describe('byte sizes', () => {
  it('parses units and bare bytes', () => {
    expect(parseByteSize('100MB')).toBe(100_000_000);
    expect(parseByteSize('5 MiB')).toBe(5 * 1024 * 1024);
    expect(parseByteSize('1024')).toBe(1024);
    expect(parseByteSize('1.5k')).toBe(1500);
    expect(parseByteSize('ten')).toBeUndefined();
    expect(parseByteSize('5 parsecs')).toBeUndefined();
  });
});

describe('fault flags', () => {
  it('parses ENDPOINT:ACTION[:PERCENT%]', () => {
    expect(parseFaultFlag('patch_trace:apply_then_error:20%')).toEqual({ endpoint: 'patch_trace', action: 'apply_then_error', percent: 20 });
    expect(parseFaultFlag('upload_artifacts:error')).toEqual({ endpoint: 'upload_artifacts', action: 'error' });
    expect(parseFaultFlag('request_build:delay')).toEqual({ endpoint: 'request_build', action: 'delay', delayMs: 1000 });
    expect(parseFaultFlag('request_build:delay:250')).toEqual({ endpoint: 'request_build', action: 'delay', delayMs: 250 });
    expect(parseFaultFlag('*:close:5%')).toEqual({ endpoint: '*', action: 'close', percent: 5 });
    expect(parseFaultFlag('request_build:error:429:50%')).toEqual({ endpoint: 'request_build', action: 'error', status: 429, percent: 50 });
    expect(parseFaultFlag('verify_runner:error:503')).toEqual({ endpoint: 'verify_runner', action: 'error', status: 503 });
  });

  it('names what is wrong', () => {
    expect(() => parseFaultFlag('nowhere:error')).toThrow(/unknown fault endpoint "nowhere"/);
    expect(() => parseFaultFlag('git:explode')).toThrow(/unknown fault action "explode"/);
    expect(() => parseFaultFlag('git:error:lots')).toThrow(/bad fault option "lots"/);
    expect(() => parseFaultFlag('git:close:429')).toThrow(/bad fault option "429"/);
    expect(() => parseFaultFlag('git:error:429:1%:2%')).toThrow(/too many options/);
  });
});

describe('Content-Range (server side)', () => {
  it('accepts start-end only', () => {
    expect(parseContentRange('0-10')).toEqual({ start: 0, end: 10 });
    expect(parseContentRange(' 5-5 ')).toEqual({ start: 5, end: 5 });
    for (const bad of ['bytes 0-10', '0-10/20', '-1-2', 'a-b', '10', '', '99999999999999999999-1']) {
      expect(parseContentRange(bad)).toBeUndefined();
    }
    expect(parseContentRange(undefined)).toBeUndefined();
  });
});

describe('secret masking', () => {
  it('replaces each occurrence with x of the same byte length and leaves the input intact', () => {
    const input = Buffer.from('a SECRET b SECRET c');
    const masked = maskSecrets(input, ['SECRET']);
    expect(masked.toString()).toBe('a xxxxxx b xxxxxx c');
    expect(input.toString()).toBe('a SECRET b SECRET c');
  });

  it('keeps lengths for multi-byte secrets and ignores very short ones', () => {
    const masked = maskSecrets(Buffer.from('[pässwörd]'), ['pässwörd', 'a']);
    expect(masked.byteLength).toBe(Buffer.byteLength('[pässwörd]'));
    expect(masked.toString()).toBe(`[${'x'.repeat(Buffer.byteLength('pässwörd'))}]`);
  });
});

describe('small payload helpers', () => {
  it('slugs refs as CI_BUILD_REF_SLUG', () => {
    expect(refSlug('Feature/Foo_bar')).toBe('feature-foo-bar');
    expect(refSlug('x'.repeat(80))).toHaveLength(63);
  });

  it('keeps artifact file names safe for Content-Disposition', () => {
    expect(safeFilename('../../etc/passwd')).toBe('passwd');
    expect(safeFilename('a"b.zip')).toBe('a_b.zip');
    expect(safeFilename('')).toBe('artifacts.zip');
  });
});
