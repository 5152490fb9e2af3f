import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { schemaMessages } from '../../src/util/schema-messages.js';

const messagesOf = (schema: z.ZodType, input: unknown, options?: Parameters<typeof schemaMessages>[0]): string[] => {
  const result = schema.safeParse(input, { error: schemaMessages(options) });
  return result.success ? [] : result.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
};

describe('schema messages', () => {
  it('names the type expected and the type got, never the value (it may be a secret)', () => {
    const schema = z.strictObject({ token: z.string(), limit: z.int(), jobs: z.int(), list: z.array(z.string()), table: z.strictObject({}) });
    const messages = messagesOf(schema, { token: 12345678, limit: 'ten', jobs: 1.5, list: 'a', table: [] });
    expect(messages).toEqual([
      'token: expected string, got number',
      'limit: expected an integer, got string',
      'jobs: expected an integer, got number',
      'list: expected array, got string',
      'table: expected object, got array',
    ]);
    expect(messages.join()).not.toMatch(/12345678|ten|1\.5/);
  });

  it('says a value is missing, in the caller\'s words, and calls an object what the caller calls it', () => {
    const schema = z.strictObject({ id: z.int(), docker: z.strictObject({}) });
    expect(messagesOf(schema, { docker: 'x' }, { missing: 'missing or null (the runner needs it)', object: 'table' })).toEqual([
      'id: missing or null (the runner needs it)',
      'docker: expected table, got string',
    ]);
  });

  it('lets a schema\'s own message win', () => {
    expect(messagesOf(z.strictObject({ name: z.string({ error: 'the service image (required)' }) }), {})).toEqual(['name: the service image (required)']);
  });

  it('lists the types a union takes when the value has none of them', () => {
    expect(messagesOf(z.union([z.string(), z.int()]), true)).toEqual([': expected string or number, got boolean']);
  });

  it('gives the check\'s message for a table key it refused', () => {
    expect(messagesOf(z.record(z.string().regex(/^\//, 'an absolute container path'), z.string()), { tmp: 'rw' })).toEqual(['tmp: an absolute container path']);
  });
});
