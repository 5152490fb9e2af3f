/**
 * A job log as GitLab's page reads it (its Ansi2json converter): each line's FF_TIMESTAMPS stamp
 * removed, and a `+` line joined to the line before it. A log without stamps comes back as it is.
 */
const STAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z [0-9a-f]{2}[OE][ +]/;

export function logText(raw: string | Buffer): string {
  let out = '';
  for (const line of String(raw).split(/(?<=\n)/)) {
    if (!STAMP.test(line)) {
      out += line;
      continue;
    }
    if (line[31] === '+' && out.endsWith('\n')) out = out.slice(0, -1);
    out += line.slice(32);
  }
  return out;
}

const MARKER = /section_(start|end):(\d+):([a-zA-Z0-9_.-]+)(\[(?:\w+=\w+)(?:, ?(?:\w+=\w+))*\])?\r\u001b\[0K/g;

/** One section of a job log as GitLab's page folds it. */
export interface LogSection {
  name: string;
  collapsed: boolean;
}

/**
 * The sections GitLab's page has open (in order) where `needle` first appears in the log (GitLab's
 * names: lower case, anything but a-z0-9 as `-`; an end closes only a section that is open).
 */
export function sectionsOpenAt(raw: string | Buffer, needle: string): LogSection[] | undefined {
  const text = logText(raw);
  const at = text.indexOf(needle);
  if (at < 0) return undefined;
  const open: LogSection[] = [];
  for (const match of text.slice(0, at).matchAll(MARKER)) {
    const name = (match[3] ?? '').toLowerCase().replace(/[^a-z0-9]/g, '-');
    const index = open.findIndex((section) => section.name === name);
    if (index >= 0) open.splice(index, 1);
    if (match[1] === 'start') open.push({ name, collapsed: /collapsed=true/.test(match[4] ?? '') });
  }
  return open;
}

/** The runner's sections of a log, in the order they open (GitLab's names). */
export function sectionNames(raw: string | Buffer): string[] {
  return [...logText(raw).matchAll(MARKER)].filter((match) => match[1] === 'start').map((match) => match[3] ?? '');
}
