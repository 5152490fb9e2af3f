/**
 * GitLab's CI/CD variable expressions (`rules:if`, `only:variables`): `$VAR` (not `${VAR}`), `"string"` and
 * `'string'`, `null`, `/regex/flags`, `==`, `!=`, `=~`, `!~`, `&&` (binding tighter than `||`, as
 * since GitLab 13.3) and parentheses. Parsed once when the pipeline is read, so a typo is a config
 * error naming the job and key, and evaluated per pipeline against its variables.
 */

export type Expression =
  | { kind: 'variable'; name: string }
  | { kind: 'string'; value: string }
  | { kind: 'null' }
  | { kind: 'pattern'; source: string; flags: string }
  | { kind: 'compare'; operator: '==' | '!=' | '=~' | '!~'; left: Expression; right: Expression }
  | { kind: 'logical'; operator: '&&' | '||'; left: Expression; right: Expression };

/** Thrown by `parseExpression`; the message says what is wrong and where. */
export class ExpressionSyntaxError extends Error {}

type Token =
  | { type: 'operand'; expression: Expression }
  | { type: 'operator'; value: '==' | '!=' | '=~' | '!~' | '&&' | '||' }
  | { type: '(' | ')' };

const OPERATORS = ['==', '!=', '=~', '!~', '&&', '||'] as const;
const VARIABLE = /^\$([A-Za-z_][A-Za-z0-9_]*)/;
/** `${NAME}`: how scripts write a variable, but not an expression (GitLab's lexer refuses it too). */
const BRACED = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}/;
/** The flags a pattern may carry; Ruby's `x` (extended) has no JavaScript equivalent. */
const PATTERN_FLAGS = /^[ims]*/;

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let at = 0;
  while (at < text.length) {
    const rest = text.slice(at);
    const space = /^\s+/.exec(rest);
    if (space) {
      at += space[0].length;
      continue;
    }
    const operator = OPERATORS.find((candidate) => rest.startsWith(candidate));
    if (operator !== undefined) {
      tokens.push({ type: 'operator', value: operator });
      at += 2;
    } else if (rest[0] === '(' || rest[0] === ')') {
      tokens.push({ type: rest[0] });
      at += 1;
    } else {
      const [expression, length] = readOperand(rest, at);
      tokens.push({ type: 'operand', expression });
      at += length;
    }
  }
  return tokens;
}

/** One operand at the start of `rest` (at offset `at` of the whole text) and its length. */
function readOperand(rest: string, at: number): [Expression, number] {
  const variable = VARIABLE.exec(rest);
  if (variable) return [{ kind: 'variable', name: variable[1] ?? '' }, variable[0].length];
  const braced = BRACED.exec(rest);
  if (braced) throw new ExpressionSyntaxError(`'${braced[0]}' at character ${at + 1}: write $${braced[1] ?? ''} without braces (expressions do not take \${…})`);
  const quote = rest[0];
  if (quote === '"' || quote === "'") {
    const end = rest.indexOf(quote, 1);
    if (end < 0) throw new ExpressionSyntaxError(`the string starting at character ${at + 1} is not closed`);
    return [{ kind: 'string', value: rest.slice(1, end) }, end + 1];
  }
  if (/^null\b/.test(rest)) return [{ kind: 'null' }, 4];
  if (quote === '/') return readPattern(rest, at);
  throw new ExpressionSyntaxError(`unexpected '${rest.slice(0, 12)}' at character ${at + 1} (expected $VARIABLE, "string", null or /pattern/)`);
}

function readPattern(rest: string, at: number): [Expression, number] {
  let end = 1;
  while (end < rest.length && rest[end] !== '/') end += rest[end] === '\\' ? 2 : 1;
  if (end >= rest.length) throw new ExpressionSyntaxError(`the /pattern/ starting at character ${at + 1} is not closed`);
  const source = rest.slice(1, end);
  const flags = PATTERN_FLAGS.exec(rest.slice(end + 1))?.[0] ?? '';
  const pattern: Expression = { kind: 'pattern', source, flags: [...new Set(flags)].join('') };
  toRegExp(pattern.source, pattern.flags, at);
  return [pattern, end + 1 + flags.length];
}

function toRegExp(source: string, flags: string, at?: number): RegExp {
  try {
    return new RegExp(source, flags);
  } catch (error) {
    const where = at === undefined ? '' : ` at character ${at + 1}`;
    throw new ExpressionSyntaxError(`the pattern /${source}/${where} is not a valid regular expression: ${(error as Error).message}`);
  }
}

/** Parses `text`; throws `ExpressionSyntaxError` saying what is wrong. */
export function parseExpression(text: string): Expression {
  const tokens = tokenize(text);
  if (tokens.length === 0) throw new ExpressionSyntaxError('the expression is empty');
  let position = 0;
  const peek = (): Token | undefined => tokens[position];

  const primary = (): Expression => {
    const token = tokens[position++];
    if (token?.type === '(') {
      const inner = or();
      if (tokens[position++]?.type !== ')') throw new ExpressionSyntaxError('a ( is not closed by a )');
      return inner;
    }
    if (token?.type !== 'operand') throw new ExpressionSyntaxError(`expected a value ${token === undefined ? 'at the end' : `before '${describe(token)}'`}`);
    return token.expression;
  };
  const comparison = (): Expression => {
    const left = primary();
    const next = peek();
    if (next?.type === 'operator' && (next.value === '==' || next.value === '!=' || next.value === '=~' || next.value === '!~')) {
      position += 1;
      return { kind: 'compare', operator: next.value, left, right: primary() };
    }
    return left;
  };
  /** `operand (operator operand)*`, grouped to the left. */
  const chain = (operator: '&&' | '||', operand: () => Expression) => (): Expression => {
    let left = operand();
    for (let next = peek(); next?.type === 'operator' && next.value === operator; next = peek()) {
      position += 1;
      left = { kind: 'logical', operator, left, right: operand() };
    }
    return left;
  };
  // && binds tighter than ||.
  const and = chain('&&', comparison);
  const or = chain('||', and);

  const expression = or();
  const extra = peek();
  if (extra !== undefined) throw new ExpressionSyntaxError(`unexpected '${describe(extra)}' after a complete expression`);
  return expression;
}

function describe(token: Token): string {
  if (token.type === 'operator') return token.value;
  if (token.type === 'operand') return token.expression.kind === 'variable' ? `$${token.expression.name}` : token.expression.kind;
  return token.type;
}

type Value = string | null | boolean | RegExp;

/**
 * Evaluates `expression` with `variables` (an unset variable is `null`). True when the result is
 * truthy: a non-empty string, a true comparison, a pattern.
 */
export function evaluateExpression(expression: Expression, variables: Readonly<Record<string, string>>): boolean {
  return truthy(evaluate(expression, variables));
}

function truthy(value: Value): boolean {
  return value instanceof RegExp || (typeof value === 'string' ? value !== '' : value === true);
}

function evaluate(expression: Expression, variables: Readonly<Record<string, string>>): Value {
  switch (expression.kind) {
    case 'variable':
      return Object.hasOwn(variables, expression.name) ? (variables[expression.name] ?? null) : null;
    case 'string':
      return expression.value;
    case 'null':
      return null;
    case 'pattern':
      return new RegExp(expression.source, expression.flags);
    case 'logical': {
      const left = truthy(evaluate(expression.left, variables));
      if (expression.operator === '&&') return left && truthy(evaluate(expression.right, variables));
      return left || truthy(evaluate(expression.right, variables));
    }
    case 'compare':
      return compare(expression.operator, evaluate(expression.left, variables), evaluate(expression.right, variables));
  }
}

function compare(operator: '==' | '!=' | '=~' | '!~', left: Value, right: Value): boolean {
  if (operator === '==' || operator === '!=') {
    const equal = left instanceof RegExp || right instanceof RegExp ? String(left) === String(right) : left === right;
    return operator === '==' ? equal : !equal;
  }
  const matched = typeof left === 'string' && matches(left, right);
  return operator === '=~' ? matched : !matched;
}

/** The right side of `=~` is a pattern, or a variable holding one (`PATTERN: /^release/i`). */
function matches(text: string, pattern: Value): boolean {
  if (pattern instanceof RegExp) return pattern.test(text);
  if (typeof pattern !== 'string') return false;
  const literal = /^\/(.*)\/([ims]*)$/s.exec(pattern);
  if (!literal) return false;
  try {
    return new RegExp(literal[1] ?? '', [...new Set(literal[2])].join('')).test(text);
  } catch {
    return false;
  }
}
