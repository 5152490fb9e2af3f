import { describe, expect, it } from 'vitest';
import { limitNotice, OutputLimiter } from '../../src/trace/limit.js';

describe('OutputLimiter', () => {
  it('cuts exactly at the limit for ASCII output', () => {
    const limiter = new OutputLimiter(10);
    expect(limiter.observe(Buffer.from('12345'))).toBeUndefined();
    expect(limiter.observe(Buffer.from('67890'))).toBeUndefined();
    expect(limiter.observe(Buffer.from('x'))).toBe(10);
    expect(limiter.observe(Buffer.from('more'))).toBeUndefined();
    expect(limiter.cut).toBe(10);
  });

  it('does not cut output of exactly the limit', () => {
    const limiter = new OutputLimiter(4);
    expect(limiter.observe(Buffer.from('abcd'))).toBeUndefined();
    expect(limiter.cut).toBeUndefined();
  });

  it('cuts before a multi-byte character that straddles the limit, also across chunks', () => {
    // '€' is 3 bytes: E2 82 AC. Limit 5 falls inside the second euro sign (bytes 4..6).
    const bytes = Buffer.from('a€€b'); // a(0) €(1-3) €(4-6) b(7)
    for (let split = 0; split <= bytes.length; split++) {
      const limiter = new OutputLimiter(5);
      const first = limiter.observe(bytes.subarray(0, split));
      const second = limiter.observe(bytes.subarray(split));
      expect(first ?? second).toBe(4);
    }
  });

  it('names the limit and the full log path in its notice', () => {
    const notice = limitNotice(4096, '/state/job-1/trace.log');
    expect(notice).toContain('4096 bytes');
    expect(notice).toContain('/state/job-1/trace.log');
    expect(notice.startsWith('\n')).toBe(true);
    expect(notice.endsWith('\n')).toBe(true);
  });
});
