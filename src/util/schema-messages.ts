/**
 * Words for zod's issues, for the two schemas a user or an operator reads problems of: config.toml
 * and the build payload. Passed to a parse as its error map, so a schema's own message (`{ error }`)
 * still wins. A message never repeats the value it refuses: a config value or a payload field may be
 * a secret (a token, a password in a URL), so it names the type instead.
 */
import { z } from 'zod';

export interface MessageOptions {
  /** For a value that is absent: `missing` unless said otherwise. */
  missing?: string;
  /** What an object is called where the value comes from: `table` in TOML; `object` unless said otherwise. */
  object?: string;
}

/** What `input` is, as a user would name it. */
export function typeName(input: unknown): string {
  if (input === null) return 'null';
  if (Array.isArray(input)) return 'array';
  if (input instanceof Date) return 'date';
  if (typeof input === 'number' && !Number.isFinite(input)) return String(input);
  return typeof input;
}

/** What `issue` expected; `z.int()` says `number` for a value that is not a number at all. */
function expectedName(issue: { expected: string; inst?: unknown }, object: string): string {
  if (issue.expected === 'int') return 'an integer';
  if (issue.expected === 'number' && issue.inst instanceof z.ZodNumber && /int/.test(issue.inst.format ?? '')) return 'an integer';
  return issue.expected === 'object' || issue.expected === 'record' ? object : issue.expected;
}

/** A zod error map giving the messages above; undefined leaves zod's own (ranges, options, formats). */
export function schemaMessages(options: MessageOptions = {}): z.core.$ZodErrorMap {
  const missing = options.missing ?? 'missing';
  const object = options.object ?? 'object';
  return (issue) => {
    switch (issue.code) {
      case 'invalid_type':
        return issue.input === undefined ? missing : `expected ${expectedName(issue, object)}, got ${typeName(issue.input)}`;
      case 'invalid_union': {
        // Every form refused the type itself: say which types would do.
        const roots = issue.errors.map((branch) => branch.find((inner) => inner.path.length === 0 && inner.code === 'invalid_type'));
        if (roots.length === 0 || roots.some((inner) => inner === undefined)) return undefined;
        const types = [...new Set(roots.map((inner) => (inner?.code === 'invalid_type' ? expectedName(inner, object) : '')))];
        return issue.input === undefined ? missing : `expected ${types.join(' or ')}, got ${typeName(issue.input)}`;
      }
      case 'invalid_key':
        // A table's key (its name, not a secret) that its check refused: that check's message.
        return issue.issues.map((inner) => inner.message).join('; ') || undefined;
      default:
        return undefined;
    }
  };
}
