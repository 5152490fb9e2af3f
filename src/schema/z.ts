/**
 * The constructors of our zod-like validator (`import { z } from '../schema/index.js'`): the types and
 * checks the config and build-payload schemas use, with zod's names and zod 4's semantics. Anything
 * else zod has is deliberately absent; add it here when a schema needs it.
 */
import { FAIL, messageOf, Schema, typeIssue, wrap, type Issue, type Outcome, type Params } from './base.js';

export { NEVER, Schema, SchemaError, type Context, type Issue } from './base.js';
export type output<T extends Schema<unknown>> = T['_output'];

type Check<T> = (value: T, path: PropertyKey[], issues: Issue[]) => void;

/** A primitive with chainable checks; each check adds an issue but lets the others run. */
class Checked<T> extends Schema<T> {
  constructor(
    protected readonly accept: (input: unknown) => input is T,
    protected readonly expected: string,
    protected readonly params: Params,
    protected readonly checks: ReadonlyArray<Check<T>> = [],
  ) {
    super();
  }

  run(input: unknown, path: PropertyKey[], issues: Issue[]): Outcome<T> {
    if (!this.accept(input)) {
      issues.push(typeIssue(path, this.expected, input, this.params));
      return FAIL;
    }
    const before = issues.length;
    for (const check of this.checks) check(input, path, issues);
    return issues.length > before ? FAIL : input;
  }

  protected check(test: (value: T) => boolean, issue: Omit<Issue, 'path'>): Check<T> {
    return (value, path, issues) => {
      if (!test(value)) issues.push({ ...issue, path, message: issue.message });
    };
  }
}

export class StringSchema extends Checked<string> {
  private with(check: Check<string>): StringSchema {
    return new StringSchema(this.accept, this.expected, this.params, [...this.checks, check]);
  }

  min(length: number, params?: Params): StringSchema {
    const message = messageOf(params) ?? messageOf(this.params) ?? `Too small: expected string to have >=${length} characters`;
    return this.with(this.check((v) => v.length >= length, { code: 'too_small', message }));
  }

  regex(pattern: RegExp, params?: Params): StringSchema {
    const message = messageOf(params) ?? messageOf(this.params) ?? `Invalid string: must match pattern ${String(pattern)}`;
    return this.with(this.check((v) => pattern.test(v), { code: 'invalid_format', message }));
  }
}

export class NumberSchema extends Checked<number> {
  private with(check: Check<number>): NumberSchema {
    return new NumberSchema(this.accept, this.expected, this.params, [...this.checks, check]);
  }

  min(bound: number, params?: Params): NumberSchema {
    const message = messageOf(params) ?? messageOf(this.params) ?? `Too small: expected number to be >=${bound}`;
    return this.with(this.check((v) => v >= bound, { code: 'too_small', message }));
  }

  max(bound: number, params?: Params): NumberSchema {
    const message = messageOf(params) ?? messageOf(this.params) ?? `Too big: expected number to be <=${bound}`;
    return this.with(this.check((v) => v <= bound, { code: 'too_big', message }));
  }

  positive(params?: Params): NumberSchema {
    const message = messageOf(params) ?? messageOf(this.params) ?? 'Too small: expected number to be >0';
    return this.with(this.check((v) => v > 0, { code: 'too_small', message }));
  }

  nonnegative(params?: Params): NumberSchema {
    return this.min(0, params);
  }
}

export class ArraySchema<T> extends Schema<T[]> {
  constructor(
    private readonly item: Schema<T>,
    private readonly minLength = 0,
    private readonly minMessage?: string,
  ) {
    super();
  }

  run(input: unknown, path: PropertyKey[], issues: Issue[]): Outcome<T[]> {
    if (!Array.isArray(input)) {
      issues.push(typeIssue(path, 'array', input, undefined));
      return FAIL;
    }
    const before = issues.length;
    const out = input.map((entry, i) => this.item.run(entry, [...path, i], issues));
    if (input.length < this.minLength) {
      issues.push({ code: 'too_small', path, message: this.minMessage ?? `Too small: expected array to have >=${this.minLength} items` });
    }
    return issues.length > before ? FAIL : (out as T[]);
  }

  min(length: number, params?: Params): ArraySchema<T> {
    return new ArraySchema(this.item, length, messageOf(params));
  }
}

type Shape = Record<string, Schema<unknown>>;
type OptionalKeys<S extends Shape> = { [K in keyof S]: undefined extends S[K]['_output'] ? K : never }[keyof S];
type ObjectOutput<S extends Shape> = { [K in Exclude<keyof S, OptionalKeys<S>>]: S[K]['_output'] } & { [K in OptionalKeys<S>]?: S[K]['_output'] };
type Flat<T> = { [K in keyof T]: T[K] };

export class ObjectSchema<S extends Shape, Extra = object> extends Schema<Flat<ObjectOutput<S>> & Extra> {
  constructor(
    readonly shape: S,
    private readonly strict: boolean,
    private readonly params: Params,
  ) {
    super();
  }

  run(input: unknown, path: PropertyKey[], issues: Issue[]): Outcome<Flat<ObjectOutput<S>> & Extra> {
    if (typeof input !== 'object' || input === null || Array.isArray(input)) {
      issues.push(typeIssue(path, 'object', input, this.params));
      return FAIL;
    }
    const record = input as Record<string, unknown>;
    const before = issues.length;
    const out: Record<string, unknown> = {};
    for (const [key, schema] of Object.entries(this.shape)) {
      const value = schema.run(record[key], [...path, key], issues);
      if (value !== undefined && value !== FAIL) out[key] = value;
    }
    const unknown = Object.keys(record).filter((key) => !Object.hasOwn(this.shape, key));
    if (this.strict && unknown.length > 0) {
      const message = messageOf(this.params) ?? `Unrecognized key${unknown.length > 1 ? 's' : ''}: ${unknown.map((k) => `"${k}"`).join(', ')}`;
      issues.push({ code: 'unrecognized_keys', path, keys: unknown, message });
    } else if (!this.strict) for (const key of unknown) out[key] = record[key];
    return issues.length > before ? FAIL : (out as Flat<ObjectOutput<S>> & Extra);
  }

  /** The same object without the keys set in `mask` (as zod's `omit`). */
  omit<const M extends { readonly [K in keyof S]?: true }>(mask: M): ObjectSchema<Omit<S, keyof M & keyof S>, Extra> {
    const shape = Object.fromEntries(Object.entries(this.shape).filter(([key]) => !Object.hasOwn(mask, key)));
    return new ObjectSchema(shape as Omit<S, keyof M & keyof S>, this.strict, this.params);
  }
}

const isString = (v: unknown): v is string => typeof v === 'string';
const isNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v);
const isBoolean = (v: unknown): v is boolean => typeof v === 'boolean';

export const string = (params?: Params): StringSchema => new StringSchema(isString, 'string', params);
export const number = (params?: Params): NumberSchema => new NumberSchema(isNumber, 'number', params);
export const int = (params?: Params): NumberSchema => new NumberSchema(isInt, 'int', params);
export const boolean = (params?: Params): Schema<boolean> => new Checked(isBoolean, 'boolean', params);
export const unknown = (): Schema<unknown> => wrap((input) => input);

/** A string that parses as a URL whose scheme matches `protocol` (without the colon). */
export function url(options: { protocol?: RegExp; error?: string } = {}): Schema<string> {
  return string(options.error).superRefine((value, ctx) => {
    let scheme: string;
    try {
      scheme = new URL(value).protocol.slice(0, -1);
    } catch {
      ctx.addIssue({ code: 'invalid_format', message: options.error ?? 'Invalid URL' });
      return;
    }
    if (options.protocol && !options.protocol.test(scheme)) ctx.addIssue({ code: 'invalid_format', message: options.error ?? 'Invalid URL' });
  });
}

export function enum_<const T extends readonly string[]>(values: T, params?: Params): Schema<T[number]> {
  return wrap((input, path, issues) => {
    if (typeof input === 'string' && values.includes(input)) return input as T[number];
    issues.push({ code: 'invalid_value', path, message: messageOf(params) ?? `Invalid option: expected one of ${values.map((v) => JSON.stringify(v)).join('|')}` });
    return FAIL;
  });
}
export { enum_ as enum };

export function literal<const T extends string | number | boolean>(value: T, params?: Params): Schema<T> {
  return wrap((input, path, issues) => {
    if (input === value) return value;
    issues.push({ code: 'invalid_value', path, message: messageOf(params) ?? `Invalid input: expected ${JSON.stringify(value)}` });
    return FAIL;
  });
}

/** The first option that accepts the input; when none does, the issues of the only option whose type matched, else one. */
export function union<const T extends ReadonlyArray<Schema<unknown>>>(options: T, params?: Params): Schema<T[number]['_output']> {
  return wrap((input, path, issues) => {
    const failures: Issue[][] = [];
    for (const option of options) {
      const own: Issue[] = [];
      const value = option.run(input, path, own);
      if (value !== FAIL && own.length === 0) return value;
      failures.push(own);
    }
    const custom = messageOf(params);
    const typed = failures.filter((own) => !own.every((issue) => issue.code === 'invalid_type' && issue.path.length === path.length));
    if (!custom && typed.length === 1) issues.push(...(typed[0] ?? []));
    else issues.push({ code: 'invalid_union', path, message: custom ?? 'Invalid input' });
    return FAIL;
  });
}

export const array = <T>(item: Schema<T>): ArraySchema<T> => new ArraySchema(item);

export function record<V>(key: Schema<string>, value: Schema<V>): Schema<Record<string, V>> {
  return wrap((input, path, issues) => {
    if (typeof input !== 'object' || input === null || Array.isArray(input)) {
      issues.push(typeIssue(path, 'record', input, undefined));
      return FAIL;
    }
    const before = issues.length;
    const out: Record<string, V> = {};
    for (const [k, v] of Object.entries(input)) {
      key.run(k, [...path, k], issues);
      const checked = value.run(v, [...path, k], issues);
      if (checked !== FAIL) out[k] = checked;
    }
    return issues.length > before ? FAIL : out;
  });
}

/** An object whose unknown keys are an issue. */
export const strictObject = <S extends Shape>(shape: S, params?: Params): ObjectSchema<S> => new ObjectSchema(shape, true, params);
/** An object whose unknown keys are kept as they are. */
export const looseObject = <S extends Shape>(shape: S, params?: Params): ObjectSchema<S, Record<string, unknown>> =>
  new ObjectSchema<S, Record<string, unknown>>(shape, false, params);

export function preprocess<T>(fn: (input: unknown) => unknown, schema: Schema<T>): Schema<T> {
  return wrap((input, path, issues) => schema.run(fn(input), path, issues));
}
