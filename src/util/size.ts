/**
 * Byte sizes as an operator writes them in config.toml or on a command line: `500MB`, `10 GiB`,
 * `1.5g`, `4096B`. Units are powers of 1024 whether or not they carry the `i` (MB = MiB), as in
 * Docker's `--memory` and in GitLab's `max_artifacts_size`, and as this runner prints sizes
 * ("12.3 MB" is MiB). A bare number has no unit on purpose: `1024` could mean bytes or megabytes.
 */

const UNIT_BYTES: ReadonlyMap<string, number> = new Map(
  (
    [
      [1, ['b']],
      [1024, ['k', 'kb', 'kib']],
      [1024 ** 2, ['m', 'mb', 'mib']],
      [1024 ** 3, ['g', 'gb', 'gib']],
      [1024 ** 4, ['t', 'tb', 'tib']],
    ] as const
  ).flatMap(([bytes, names]) => names.map((name) => [name, bytes] as const)),
);

/** Parses `text` into whole bytes; `undefined` when it is not a number followed by a unit. */
export function parseSizeBytes(text: string): number | undefined {
  const match = /^(\d+(?:\.\d+)?)\s*([a-z]+)$/.exec(text.trim().toLowerCase());
  const unit = match ? UNIT_BYTES.get(match[2] ?? '') : undefined;
  if (!match || unit === undefined) return undefined;
  const bytes = Math.floor(Number(match[1]) * unit);
  return Number.isSafeInteger(bytes) ? bytes : undefined;
}
