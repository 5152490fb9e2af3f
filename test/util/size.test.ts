import { describe, expect, it } from 'vitest';
import { parseSizeBytes } from '../../src/util/size.js';

describe('parseSizeBytes', () => {
  it.each([
    ['512B', 512],
    ['4k', 4096],
    ['500MB', 500 * 1024 ** 2],
    ['500 MiB', 500 * 1024 ** 2],
    ['1.5GB', 1.5 * 1024 ** 3],
    [' 2 tib ', 2 * 1024 ** 4],
    ['0MB', 0],
  ])('reads %j as %i bytes (units are powers of 1024)', (text, bytes) => {
    expect(parseSizeBytes(text)).toBe(bytes);
  });

  it.each(['1024', '', 'MB', '-1MB', '1e3MB', '5 PB', '1.MB', 'ten MB'])('refuses %j (a number with a known unit is required)', (text) => {
    expect(parseSizeBytes(text)).toBeUndefined();
  });
});
