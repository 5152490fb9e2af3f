/**
 * `null` in a build payload means "absent". GitLab 8.x–9.x serialises unset columns and YAML keys
 * as `null` (`artifacts_expire_at`, `before_sha`, `stage`, `tag`, `commands`, `options`, an
 * `artifacts_file.size` from before sizes were stored, a variable whose value is an unset
 * description…), and the legacy Go client decoded `null` into a zero value without complaint.
 */

/** Below this depth values are left as they are: nothing the runner reads is nested that deep. */
const MAX_DEPTH = 32;

/**
 * A copy of a decoded JSON value without `null`s: object keys holding `null` are dropped, and so are
 * `null` array elements. Depth-bounded, so a hostile deeply nested body cannot overflow the stack.
 */
export function withoutNulls(value: unknown, depth = 0): unknown {
  if (value === null || typeof value !== 'object' || depth >= MAX_DEPTH) return value;
  if (Array.isArray(value)) return value.filter((item) => item !== null).map((item: unknown) => withoutNulls(item, depth + 1));
  // fromEntries defines own properties, so a `__proto__` key stays a plain key.
  return Object.fromEntries(
    Object.entries(value)
      .filter(([, item]) => item !== null)
      .map(([key, item]) => [key, withoutNulls(item, depth + 1)]),
  );
}
