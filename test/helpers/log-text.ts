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
