/** Byte sizes for flags such as `--max-artifacts-size 100MB`: a bare number is bytes. */

const UNITS: Record<string, number> = {
  '': 1,
  b: 1,
  k: 1000,
  kb: 1000,
  kib: 1024,
  m: 1000 ** 2,
  mb: 1000 ** 2,
  mib: 1024 ** 2,
  g: 1000 ** 3,
  gb: 1000 ** 3,
  gib: 1024 ** 3,
};

/**
 * Parses `100MB`, `5 MiB`, `1024` into bytes; `undefined` when malformed. GitLab's setting was in
 * "MB" meaning MiB-ish; here `MB` is 10^6 and `MiB` 2^20, stated so nobody has to guess.
 */
export function parseByteSize(text: string): number | undefined {
  const match = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(text);
  if (!match) return undefined;
  const factor = UNITS[(match[2] ?? '').toLowerCase()];
  if (factor === undefined) return undefined;
  return Math.floor(Number(match[1]) * factor);
}
