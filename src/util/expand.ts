/**
 * The runner's `$NAME` / `${NAME}` expansion, as GitLab Runner expands job variables: one pass, an
 * unknown name or a positional/special parameter (`$1`, `$*`, `$?`) becomes empty, `$$` becomes `$`.
 * The job's variables (agent/job/variables.ts) and the docker executor's image and service names use
 * it; the pipeline engine has its own (pipeline/variables-expand.ts), as the server does not share
 * the runner's code.
 */

/**
 * Expands references in one string with `lookup`. A scan, not a regular expression: the text is a
 * job's variable, and `${` repeated without a `}` costs a backtracking search the square of its length.
 */
export function expandString(text: string, lookup: (name: string) => string): string {
  const lastClose = text.lastIndexOf('}');
  let out = '';
  let copied = 0;
  for (let at = text.indexOf('$'); at >= 0 && at < text.length - 1; at = text.indexOf('$', at)) {
    const next = text.charCodeAt(at + 1);
    let end: number;
    let value: string;
    if (next === DOLLAR) {
      end = at + 2;
      value = '$';
    } else if (next === OPEN && at + 2 <= lastClose) {
      const close = text.indexOf('}', at + 2);
      const name = text.slice(at + 2, close);
      end = close + 1;
      value = isName(name) ? lookup(name) : '';
    } else if (isNameStart(next)) {
      end = at + 2;
      while (end < text.length && isNameChar(text.charCodeAt(end))) end += 1;
      value = lookup(text.slice(at + 1, end));
    } else if (SPECIAL.includes(text[at + 1] as string)) {
      end = at + 2;
      value = '';
    } else {
      at += 1;
      continue;
    }
    out += text.slice(copied, at) + value;
    copied = end;
    at = end;
  }
  return copied === 0 ? text : out + text.slice(copied);
}

const DOLLAR = 0x24;
const OPEN = 0x7b;
/** Positional and special parameters: `$1`, `$*`, `$?`, … (empty). */
const SPECIAL = '0123456789*#?@!-';

function isNameStart(c: number): boolean {
  return (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x5f;
}

function isNameChar(c: number): boolean {
  return isNameStart(c) || (c >= 0x30 && c <= 0x39);
}

function isName(name: string): boolean {
  if (name === '' || !isNameStart(name.charCodeAt(0))) return false;
  for (let i = 1; i < name.length; i += 1) if (!isNameChar(name.charCodeAt(i))) return false;
  return true;
}
