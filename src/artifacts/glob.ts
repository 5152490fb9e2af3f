/**
 * The globs of a job's `artifacts:paths`, `artifacts:exclude` and `cache:paths`, as GitLab Runner
 * reads them (its doublestar library): `*` any run of characters but `/`, `?` one character,
 * `[abc]`, `[a-z]`, `[!a]` or `[^a]` one of a class, `{a,b}` alternatives, `**` as a whole segment
 * any number of directories (none too), `\` takes the next character literally. Dot files match like
 * any other.
 *
 * A matcher of our own, not a regular expression: the pattern and the paths are both the job's, and
 * every glob library compiles to a backtracking expression, on which `*a*a*a…*b` against a long name
 * of `a`s takes exponential time. Here a segment is matched by the two-pointer wildcard method
 * (returning only to the last `*`) and the segments the same way (returning only to the last `**`),
 * so a match costs at most (pattern length × path length) steps; the pattern, after braces, is
 * capped (MAX_PATTERN), so every match is bounded.
 */

/** Most characters of a pattern after its braces are expanded, all alternatives together. */
export const MAX_PATTERN = 8192;

/** The pattern cannot be matched within the bounds above (its message says why, for the job log). */
export class GlobError extends Error {}

type Token = { kind: 'char'; c: string } | { kind: 'one' } | { kind: 'star' } | { kind: 'class'; negate: boolean; ranges: Array<[string, string]> };
type Segment = 'globstar' | Token[];

/** A predicate for root-relative paths (`dir/file`, no leading `./`); throws GlobError for a pattern past the bounds. */
export function globMatcher(pattern: string): (path: string) => boolean {
  const alternatives = expandBraces(pattern).map(parsePath);
  return (path) => {
    const parts = path.split('/').map((part) => Array.from(part));
    return alternatives.some((segments) => matchPath(segments, parts));
  };
}

/** Whether `pattern` has any unescaped `*`, `?`, `[` or `{`. */
export function isGlob(pattern: string): boolean {
  for (let i = 0; i < pattern.length; i += 1) {
    const c = pattern[i];
    if (c === '\\') i += 1;
    else if (c === '*' || c === '?' || c === '[' || c === '{') return true;
  }
  return false;
}

/** The directories before the first segment with a glob character ('' when the first has one). */
export function globBase(pattern: string): string {
  const segments = pattern.split('/');
  const literal: string[] = [];
  for (const segment of segments.slice(0, -1)) {
    if (isGlob(segment)) break;
    literal.push(segment);
  }
  return literal.join('/');
}

/** Every alternative `{a,b}` makes, nested ones too; GlobError past MAX_PATTERN characters in all. */
function expandBraces(pattern: string): string[] {
  const tooLong = (): GlobError => new GlobError(`the pattern is longer than ${MAX_PATTERN} characters once its {…} alternatives are written out`);
  if (pattern.length > MAX_PATTERN) throw tooLong();
  const out: string[] = [];
  let size = 0;
  const expand = (text: string): void => {
    const open = firstBraces(text);
    if (open === undefined) {
      size += text.length;
      if (size > MAX_PATTERN) throw tooLong();
      out.push(text);
      return;
    }
    const { start, end, choices } = open;
    for (const choice of choices) expand(text.slice(0, start) + choice + text.slice(end + 1));
  };
  expand(pattern);
  return out;
}

/**
 * The first `{` that has a matching `}` (one pass with a stack; an unmatched `{` is a character),
 * with what is between split at its own commas.
 */
function firstBraces(text: string): { start: number; end: number; choices: string[] } | undefined {
  const open: number[] = [];
  let first: { start: number; end: number } | undefined;
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i];
    if (c === '\\') i += 1;
    else if (c === '{') open.push(i);
    else if (c === '}' && open.length > 0) {
      const start = open.pop() as number;
      if (first === undefined || start < first.start) first = { start, end: i };
    }
  }
  if (first === undefined) return undefined;
  const choices: string[] = [];
  let depth = 0;
  let from = first.start + 1;
  for (let i = first.start + 1; i < first.end; i += 1) {
    const c = text[i];
    if (c === '\\') i += 1;
    else if (c === '{') depth += 1;
    else if (c === '}') depth -= 1;
    else if (c === ',' && depth === 0) {
      choices.push(text.slice(from, i));
      from = i + 1;
    }
  }
  choices.push(text.slice(from, first.end));
  return { start: first.start, end: first.end, choices };
}

function parsePath(pattern: string): Segment[] {
  return pattern.split('/').map((segment) => (segment === '**' ? 'globstar' : parseSegment(segment)));
}

function parseSegment(segment: string): Token[] {
  const chars = Array.from(segment);
  const tokens: Token[] = [];
  for (let i = 0; i < chars.length; i += 1) {
    const c = chars[i] as string;
    if (c === '\\' && i + 1 < chars.length) {
      i += 1;
      tokens.push({ kind: 'char', c: chars[i] as string });
    } else if (c === '*') {
      // Stars in a row are one star (`a**b` in a segment is `a*b`).
      if (tokens.at(-1)?.kind !== 'star') tokens.push({ kind: 'star' });
    } else if (c === '?') tokens.push({ kind: 'one' });
    else if (c === '[') {
      const parsed = parseClass(chars, i);
      if (parsed) {
        tokens.push(parsed.token);
        i = parsed.end;
      } else tokens.push({ kind: 'char', c });
    } else tokens.push({ kind: 'char', c });
  }
  return tokens;
}

/** `[…]` from `chars[at]`; undefined when it is not closed (then `[` is a character). */
function parseClass(chars: string[], at: number): { token: Token; end: number } | undefined {
  let i = at + 1;
  const negate = chars[i] === '!' || chars[i] === '^';
  if (negate) i += 1;
  const ranges: Array<[string, string]> = [];
  let first = true;
  for (; i < chars.length; i += 1) {
    let c = chars[i] as string;
    if (c === ']' && !first) return { token: { kind: 'class', negate, ranges }, end: i };
    first = false;
    if (c === '\\' && i + 1 < chars.length) c = chars[++i] as string;
    if (chars[i + 1] === '-' && i + 2 < chars.length && chars[i + 2] !== ']') {
      let to = chars[i + 2] as string;
      i += 2;
      if (to === '\\' && i + 1 < chars.length) to = chars[++i] as string;
      ranges.push([c, to]);
    } else ranges.push([c, c]);
  }
  return undefined;
}

function matchesOne(token: Token, c: string): boolean {
  switch (token.kind) {
    case 'char':
      return token.c === c;
    case 'one':
      return true;
    case 'class':
      return token.ranges.some(([from, to]) => c >= from && c <= to) !== token.negate;
    case 'star':
      return false;
  }
}

/** One segment: `*` is any run of characters. */
function matchSegment(tokens: readonly Token[], text: readonly string[]): boolean {
  return wildcardMatch(tokens.length, text.length, (t) => tokens[t]?.kind === 'star', (t, s) => matchesOne(tokens[t] as Token, text[s] as string));
}

/** The whole path, segment by segment: `**` is any run of segments, as `*` is of characters. */
function matchPath(segments: readonly Segment[], parts: readonly string[][]): boolean {
  return wildcardMatch(segments.length, parts.length, (p) => segments[p] === 'globstar', (p, s) => matchSegment(segments[p] as Token[], parts[s] as string[]));
}

/**
 * `patternLength` pattern items against `textLength` text items, where a star item takes any run of
 * text items and any other takes one (`matches`). On a mismatch only the last star takes one item more
 * (the two-pointer method): at most patternLength × textLength calls of `matches`.
 */
function wildcardMatch(patternLength: number, textLength: number, isStar: (p: number) => boolean, matches: (p: number, t: number) => boolean): boolean {
  let p = 0;
  let t = 0;
  let star = -1;
  let starFrom = 0;
  while (t < textLength) {
    if (p < patternLength && isStar(p)) {
      star = p;
      starFrom = t;
      p += 1;
    } else if (p < patternLength && matches(p, t)) {
      p += 1;
      t += 1;
    } else if (star >= 0) {
      p = star + 1;
      starFrom += 1;
      t = starFrom;
    } else return false;
  }
  while (p < patternLength && isStar(p)) p += 1;
  return p === patternLength;
}
