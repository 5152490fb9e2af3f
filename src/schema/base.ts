/**
 * A small schema validator with the part of zod's API this runner uses (see z.ts), so the schemas of
 * config.toml and of the build payload read as they did with zod. Why not zod: the daemon keeps every
 * module it loads, and zod was ~5 MB of its idle RSS (bench/idle.ts) for a few hundred lines of checks.
 *
 * A schema's `run` returns the output value, or FAIL after pushing at least one issue. Issues carry
 * zod's fields (`code`, `path`, `message`, and `input`/`expected` for type errors) so error texts built
 * from them stay the same.
 */

export interface Issue {
  code: 'invalid_type' | 'invalid_value' | 'too_small' | 'too_big' | 'invalid_format' | 'unrecognized_keys' | 'invalid_union' | 'custom';
  path: PropertyKey[];
  message: string;
  input?: unknown;
  /** For `invalid_type`: what was expected (`string`, `number`, `int`, `boolean`, `object`, `array`). */
  expected?: string;
  keys?: string[];
}

/** What a check function gets to report problems with; paths are relative to the value checked. */
export interface Context {
  issues: Array<Omit<Issue, 'path'> & { path?: PropertyKey[] }>;
  addIssue(issue: Omit<Issue, 'path'> & { path?: PropertyKey[] }): void;
}

export const FAIL: unique symbol = Symbol('schema failure');
export type Outcome<T> = T | typeof FAIL;

/** Per-schema override of its own messages, as zod's `{ error }` parameter. */
export type Params = string | { error?: string; message?: string } | undefined;
export const messageOf = (params: Params): string | undefined => (typeof params === 'string' ? params : (params?.error ?? params?.message));

export type SafeParseResult<T> = { success: true; data: T } | { success: false; error: SchemaError };

export class SchemaError extends Error {
  constructor(readonly issues: Issue[]) {
    super(issues.map((issue) => `${issue.path.join('.') || '(value)'}: ${issue.message}`).join('; '));
    this.name = 'SchemaError';
  }
}

type Defined<T> = Exclude<T, undefined>;

export abstract class Schema<Out> {
  /** Only a type: what a successful parse returns (zod's `z.output`). */
  declare readonly _output: Out;

  /** Checks `input` at `path`; pushes issues and returns FAIL, or the output. */
  abstract run(input: unknown, path: PropertyKey[], issues: Issue[]): Outcome<Out>;

  safeParse(input: unknown, _options?: { reportInput?: boolean }): SafeParseResult<Out> {
    const issues: Issue[] = [];
    const value = this.run(input, [], issues);
    return value === FAIL || issues.length > 0 ? { success: false, error: new SchemaError(issues) } : { success: true, data: value };
  }

  parse(input: unknown): Out {
    const result = this.safeParse(input);
    if (!result.success) throw result.error;
    return result.data;
  }

  optional(): Schema<Out | undefined> {
    return wrap<Out | undefined>((input, path, issues) => (input === undefined ? undefined : this.run(input, path, issues)));
  }

  /** Absent: `value` as the output, unchecked (zod's `default`). */
  default(value: Defined<Out>): Schema<Defined<Out>> {
    return wrap((input, path, issues) => (input === undefined ? value : (this.run(input, path, issues) as Outcome<Defined<Out>>)));
  }

  /** Absent: `value` as the input, checked (zod's `prefault`). */
  prefault(value: unknown): Schema<Out> {
    return wrap((input, path, issues) => this.run(input === undefined ? value : input, path, issues));
  }

  /** Anything that fails becomes `value`, silently. */
  catch<C>(value: C): Schema<Out | C> {
    return wrap<Out | C>((input, path) => {
      const own: Issue[] = [];
      const result = this.run(input, path, own);
      return result === FAIL || own.length > 0 ? value : result;
    });
  }

  transform<N>(fn: (value: Out, ctx: Context) => N): Schema<Exclude<N, typeof NEVER>> {
    return wrap((input, path, issues) => {
      const value = this.run(input, path, issues);
      if (value === FAIL) return FAIL;
      const ctx = context();
      const next = fn(value, ctx);
      return report(ctx, path, issues) ? FAIL : (next as Exclude<N, typeof NEVER>);
    });
  }

  pipe<N>(next: Schema<N>): Schema<N> {
    return wrap((input, path, issues) => {
      const value = this.run(input, path, issues);
      return value === FAIL ? FAIL : next.run(value, path, issues);
    });
  }

  refine(check: (value: Out) => boolean, params?: Params): Schema<Out> {
    return this.superRefine((value, ctx) => {
      if (!check(value)) ctx.addIssue({ code: 'custom', message: messageOf(params) ?? 'Invalid input' });
    });
  }

  superRefine(check: (value: Out, ctx: Context) => void): Schema<Out> {
    return wrap((input, path, issues) => {
      const value = this.run(input, path, issues);
      if (value === FAIL) return FAIL;
      const ctx = context();
      check(value, ctx);
      return report(ctx, path, issues) ? FAIL : value;
    });
  }
}

/** Returned by a transform that reported an issue (its value is never used). */
export const NEVER = Symbol('never') as never;

class Wrapped<Out> extends Schema<Out> {
  constructor(readonly run: (input: unknown, path: PropertyKey[], issues: Issue[]) => Outcome<Out>) {
    super();
  }
}

export function wrap<Out>(run: (input: unknown, path: PropertyKey[], issues: Issue[]) => Outcome<Out>): Schema<Out> {
  return new Wrapped(run);
}

function context(): Context {
  const ctx: Context = { issues: [], addIssue: (issue) => void ctx.issues.push(issue) };
  return ctx;
}

/** Moves a context's issues to `issues` under `path`; true when there were any. */
function report(ctx: Context, path: PropertyKey[], issues: Issue[]): boolean {
  for (const issue of ctx.issues) issues.push({ ...issue, path: [...path, ...(issue.path ?? [])] });
  return ctx.issues.length > 0;
}

/** The name zod gives the type of `input` in messages. */
export function typeName(input: unknown): string {
  if (input === null) return 'null';
  if (Array.isArray(input)) return 'array';
  if (typeof input === 'number' && Number.isNaN(input)) return 'NaN';
  return typeof input;
}

export function typeIssue(path: PropertyKey[], expected: string, input: unknown, params: Params): Issue {
  return { code: 'invalid_type', path, input, expected, message: messageOf(params) ?? `Invalid input: expected ${expected}, received ${typeName(input)}` };
}
