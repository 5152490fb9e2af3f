/**
 * CI/CD inputs: a file's `spec: inputs:` header (the first YAML document, before `---`), the values an
 * `include:` (or a trigger's include) gives it, and `$[[ inputs.NAME ]]` interpolation of the file's
 * keys and values, as GitLab does it: each input has a `type` (string, number, boolean, array), an
 * optional `default` (without one the input is required), `options` and, for strings, a `regex`. A
 * block may pipe the value through up to three functions (`truncate(offset,length)`, `expand_vars`,
 * `posix_escape`). A block that is a whole value keeps the input's type; inside a longer string it
 * becomes text. `$[[ matrix.NAME ]]` is left for `needs:parallel:matrix`. Errors use GitLab's words
 * ("`name` input: required value has not been provided", "unknown interpolation key: `x`").
 */
import { childPath, configError, PipelineConfigError, type ConfigPath } from './parse-error.js';
import { checkKeys, isMap, readMap, type YamlMap } from './parse-values.js';
import type { InputValues } from './spec.js';

export type InputType = 'string' | 'number' | 'boolean' | 'array';
const INPUT_TYPES: readonly InputType[] = ['string', 'number', 'boolean', 'array'];
const INPUT_KEYS = ['type', 'description', 'options', 'regex', 'default'];
/** GitLab's limits: blocks per file, functions per block, the size of an access expression. */
const MAX_BLOCKS = 10_000;
const MAX_FUNCTIONS = 3;
const MAX_ACCESS_BYTES = 1024;
/** A regex an input names is matched against values of at most this length (JavaScript's backtracking). */
const MAX_MATCHED_LENGTH = 4096;

export interface InputSpec {
  type: InputType;
  default?: unknown;
  options?: unknown[];
  regex?: string;
}

/** `spec:` of a header document: its inputs, checked. */
export function readInputSpecs(header: YamlMap, file: string): Record<string, InputSpec> {
  const at: ConfigPath = { key: `${file} header:spec` };
  const spec = readMap(header.spec ?? {}, at);
  checkKeys(spec, ['inputs'], at);
  const inputs = spec.inputs === undefined || spec.inputs === null ? {} : readMap(spec.inputs, childPath(at, 'inputs'));
  const specs: Record<string, InputSpec> = {};
  for (const [name, raw] of Object.entries(inputs)) {
    const path = childPath(childPath(at, 'inputs'), name);
    if (raw === null || raw === undefined) {
      specs[name] = { type: 'string' };
      continue;
    }
    const map = readMap(raw, path);
    checkKeys(map, INPUT_KEYS, path);
    const type = map.type === undefined || map.type === null ? 'string' : map.type;
    if (!INPUT_TYPES.includes(type as InputType)) configError(path, `unknown input specification for \`${name}\` (valid types: ${INPUT_TYPES.join(', ')})`);
    const input: InputSpec = { type: type as InputType };
    if (Object.hasOwn(map, 'default')) input.default = map.default;
    if (map.options !== undefined && map.options !== null) {
      if (!Array.isArray(map.options)) configError(childPath(path, 'options'), 'must be a list of values');
      input.options = map.options;
    }
    if (map.regex !== undefined && map.regex !== null) {
      if (typeof map.regex !== 'string') configError(childPath(path, 'regex'), 'must be a string');
      input.regex = map.regex;
    }
    specs[name] = input;
  }
  return specs;
}

/** `include: inputs:` and the like: a map of input names to values. */
export function readInputValues(value: unknown, path: ConfigPath): InputValues {
  return { ...readMap(value, path) };
}

function typeOk(type: InputType, value: unknown): boolean {
  if (type === 'string') return typeof value === 'string';
  if (type === 'number') return typeof value === 'number' && Number.isFinite(value);
  if (type === 'boolean') return typeof value === 'boolean';
  return Array.isArray(value);
}

function regexError(spec: InputSpec, value: string, given: boolean): string | undefined {
  if (spec.regex === undefined) return undefined;
  let pattern: RegExp;
  try {
    pattern = new RegExp(spec.regex.replace(/^\/(.*)\/$/s, '$1'));
  } catch {
    return 'invalid regular expression';
  }
  if (pattern.test(value.slice(0, MAX_MATCHED_LENGTH))) return undefined;
  return `${given ? 'provided' : 'default'} value does not match required RegEx pattern`;
}

/** The value of every input, or every problem in GitLab's words. */
export function resolveInputs(specs: Readonly<Record<string, InputSpec>>, given: InputValues): { values: Record<string, unknown>; errors: string[] } {
  const errors: string[] = [];
  const unknown = Object.keys(given).filter((name) => !Object.hasOwn(specs, name));
  if (unknown.length > 0) errors.push(`unknown input arguments: ${unknown.join(', ')}`);
  const values: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(specs)) {
    const problem = (text: string): void => {
      errors.push(`\`${name}\` input: ${text}`);
    };
    const provided = given[name] !== undefined && given[name] !== null;
    if (!provided && !Object.hasOwn(spec, 'default')) {
      problem('required value has not been provided');
      continue;
    }
    const value = provided ? given[name] : spec.default;
    if (!provided && value !== null && !typeOk(spec.type, value)) {
      problem(`default value is not a${spec.type === 'array' ? 'n' : ''} ${spec.type}`);
      continue;
    }
    if (provided && !typeOk(spec.type, value)) {
      problem(`provided value is not a${spec.type === 'array' ? 'n' : ''} ${spec.type}`);
      continue;
    }
    if (spec.options !== undefined && !spec.options.some((option) => option === value)) {
      problem(`\`${String(value)}\` cannot be used because it is not in the list of allowed options`);
      continue;
    }
    const regex = typeof value === 'string' ? regexError(spec, value, provided) : undefined;
    if (regex !== undefined) {
      problem(regex);
      continue;
    }
    values[name] = value;
  }
  return { values, errors };
}

/** GitLab's interpolation block: `$[[ access | function | … ]]`, at least two characters inside. */
const BLOCK = /\$\[\[\s*(\S.*?\S)\s*\]\]/g;

/** What interpolation may read: the inputs, and variables for `expand_vars`. */
export interface InterpolationContext {
  inputs: Readonly<Record<string, unknown>>;
  variables: Readonly<Record<string, string>>;
}

/**
 * `value` with every `$[[ … ]]` block replaced, keys included. Throws `PipelineConfigError` naming
 * `file` and the first problem ("interpolation interrupted by errors, …", as GitLab says).
 */
export function interpolate(value: unknown, context: InterpolationContext, file: string): unknown {
  const state = { blocks: 0 };
  const fail = (problem: string): never => {
    throw new PipelineConfigError(`${file}: interpolation interrupted by errors, ${problem}`, { key: 'include:inputs' });
  };
  const text = (node: string): unknown => {
    if (!node.includes('$[[')) return node;
    // GitLab: a node that is one block and nothing else takes the value itself, typed.
    const whole = new RegExp(BLOCK.source).exec(node);
    if (whole && whole[0].length === node.length) {
      state.blocks += 1;
      return blockValue(whole[1] ?? '', whole[0], context, fail);
    }
    return node.replace(BLOCK, (block, data: string) => {
      state.blocks += 1;
      if (state.blocks > MAX_BLOCKS) fail('too many interpolation blocks');
      const result = blockValue(data, block, context, fail);
      return typeof result === 'string' ? result : Array.isArray(result) || isMap(result) ? JSON.stringify(result) : String(result);
    });
  };
  const walk = (node: unknown): unknown => {
    if (typeof node === 'string') return text(node);
    if (Array.isArray(node)) return node.map(walk);
    if (!isMap(node) || Object.getPrototypeOf(node) !== Object.prototype) return node;
    const out: YamlMap = {};
    for (const [key, inner] of Object.entries(node)) out[String(text(key))] = walk(inner);
    return out;
  };
  return walk(value);
}

function blockValue(data: string, block: string, context: InterpolationContext, fail: (problem: string) => never): unknown {
  const [access = '', ...functions] = data.split('|').map((part) => part.trim());
  const objects = access.split('.');
  // `$[[ matrix.NAME ]]` belongs to needs:parallel:matrix (needs-graph.ts), not to inputs.
  if (objects[0] === 'matrix') return block;
  if (objects.length <= 1) fail('invalid interpolation access pattern');
  if (Buffer.byteLength(access) > MAX_ACCESS_BYTES) fail('maximum interpolation expression size exceeded');
  if (functions.length > MAX_FUNCTIONS) fail('too many functions in interpolation block');
  let value: unknown = { inputs: context.inputs };
  for (const key of objects) {
    if (!isMap(value) || !Object.hasOwn(value, key)) fail(`unknown interpolation key: \`${key}\``);
    value = (value as YamlMap)[key];
  }
  for (const expression of functions) value = applyFunction(expression, value, context, fail);
  return value;
}

function applyFunction(expression: string, value: unknown, context: InterpolationContext, fail: (problem: string) => never): unknown {
  const truncate = /^truncate\(\s*(\d+)\s*,\s*(\d+)\s*\)$/.exec(expression);
  const name = truncate ? 'truncate' : expression;
  if (!['truncate', 'expand_vars', 'posix_escape'].includes(name)) {
    fail(`no function matching \`${expression}\`: check that the function name, arguments, and types are correct`);
  }
  if (typeof value !== 'string') fail(`invalid input type: ${name} can only be used with string inputs`);
  const text = value as string;
  if (truncate) return text.slice(Number(truncate[1]), Number(truncate[1]) + Number(truncate[2]));
  if (name === 'expand_vars') {
    // Only variables that exist are expanded; others stay as written (GitLab's expand_existing).
    return text.replace(/\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))/g, (whole, braced?: string, bare?: string) => context.variables[braced ?? bare ?? ''] ?? whole);
  }
  return posixEscape(text);
}

/** Ruby's `Shellwords.shellescape`: a backslash before every character a shell treats specially. */
function posixEscape(text: string): string {
  if (text === '') return "''";
  return text.replace(/[^A-Za-z0-9_\-.,:+/@\n]/g, '\\$&').replace(/\n/g, "'\n'");
}
