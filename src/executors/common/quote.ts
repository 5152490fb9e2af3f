/**
 * POSIX single-quote quoting: inside '…' nothing is special, so any value (quotes, newlines, `$`,
 * backslashes) round-trips literally in both bash and sh. A `'` becomes `'\''`.
 */
export function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/** Variable names a shell can export; others are skipped (with a notice by the caller). */
export function isExportableName(name: string): boolean {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(name);
}
