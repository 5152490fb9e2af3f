import { describe, expect, it } from 'vitest';
import { z } from '../src/schema/index.js';

const issuesOf = (schema: z.Schema<unknown>, input: unknown): Array<{ code: string; path: string; message: string }> => {
  const result = schema.safeParse(input);
  return result.success ? [] : result.error.issues.map((i) => ({ code: i.code, path: i.path.join('.'), message: i.message }));
};

describe('schema (our zod subset)', () => {
  it('fills a default without checking it, and checks a prefault', () => {
    expect(z.strictObject({ n: z.int().min(5).default(1) }).parse({})).toEqual({ n: 1 });
    expect(issuesOf(z.strictObject({ t: z.strictObject({ n: z.int().default(2) }).prefault({}) }), {})).toEqual([]);
    expect(z.strictObject({ t: z.strictObject({ n: z.int().default(2) }).prefault({}) }).parse({})).toEqual({ t: { n: 2 } });
  });

  it('names every problem with its path: types, checks and unknown keys of a strict object', () => {
    const schema = z.strictObject({ a: z.string().min(1, 'not empty'), list: z.array(z.int().min(0)) });
    expect(issuesOf(schema, { a: '', list: [1, -1, 'x'], extra: true })).toEqual([
      { code: 'too_small', path: 'a', message: 'not empty' },
      { code: 'too_small', path: 'list.1', message: 'Too small: expected number to be >=0' },
      { code: 'invalid_type', path: 'list.2', message: 'Invalid input: expected int, received string' },
      { code: 'unrecognized_keys', path: '', message: 'Unrecognized key: "extra"' },
    ]);
  });

  it('omits keys from an object and stays strict about the rest', () => {
    const schema = z.strictObject({ a: z.string(), b: z.strictObject({ c: z.int() }) }).omit({ b: true });
    expect(schema.parse({ a: 'x' })).toEqual({ a: 'x' });
    expect(issuesOf(schema, { a: 'x', b: { c: 1 } })).toEqual([{ code: 'unrecognized_keys', path: '', message: 'Unrecognized key: "b"' }]);
  });

  it('keeps unknown keys of a loose object and leaves absent optional keys absent', () => {
    const parsed = z.looseObject({ a: z.string().optional() }).parse({ b: 1 });
    expect(parsed).toEqual({ b: 1 });
    expect('a' in parsed).toBe(false);
  });

  it('turns anything unreadable into the catch value, without an issue', () => {
    expect(z.strictObject({ s: z.enum(['a', 'b']).catch('a') }).parse({ s: 'zzz' })).toEqual({ s: 'a' });
  });

  it('reports a union with its own message, or the issues of the one option whose type matched', () => {
    expect(issuesOf(z.union([z.string(), z.int()], { error: 'a name or a number' }), true)).toEqual([{ code: 'invalid_union', path: '', message: 'a name or a number' }]);
    expect(issuesOf(z.union([z.string().regex(/^\d+m$/, 'like "512m"'), z.int()]), '5 GB')).toEqual([{ code: 'invalid_format', path: '', message: 'like "512m"' }]);
  });

  it('fails a transform that reported an issue, at the value\'s path', () => {
    const even = z.int().transform((v, ctx) => {
      if (v % 2 === 0) return v / 2;
      ctx.issues.push({ code: 'custom', input: v, message: 'odd' });
      return z.NEVER;
    });
    expect(z.strictObject({ n: even }).parse({ n: 4 })).toEqual({ n: 2 });
    expect(issuesOf(z.strictObject({ n: even }), { n: 3 })).toEqual([{ code: 'custom', path: 'n', message: 'odd' }]);
  });
});
