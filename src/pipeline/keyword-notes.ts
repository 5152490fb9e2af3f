/**
 * "not applied locally": the keywords a pipeline uses that this engine accepts but does not apply
 * (`warned` in `keywords.ts`), found by walking the merged configuration through the keyword tables —
 * the global keys, `default:` and every job that can run (hidden `.templates` are not jobs). One line
 * per keyword, naming where it is used and why it has no effect here, so nothing is ignored silently.
 */
import { DEFAULT_KEYWORDS, GLOBAL_KEYWORDS, JOB_KEYWORDS, type KeywordTable } from './keywords.js';
import { isMap, type YamlMap } from './parse-values.js';

/** Places named per keyword; the rest are counted. */
const MAX_PLACES = 5;

interface Use {
  reason: string;
  where: Set<string>;
}

/** One line per keyword that is not applied: `secrets (jobs deploy, release): <reason>`. */
export function notAppliedLocally(root: YamlMap): string[] {
  const uses = new Map<string, Use>();
  for (const [name, value] of Object.entries(root)) {
    if (name === 'default') walk(value, DEFAULT_KEYWORDS, 'default', 'default:', uses);
    else if (Object.hasOwn(GLOBAL_KEYWORDS, name)) walk({ [name]: value }, GLOBAL_KEYWORDS, name, '', uses);
    else if (!name.startsWith('.') && isMap(value)) walk(value, JOB_KEYWORDS, `job ${name}`, '', uses);
  }
  return [...uses].map(([key, use]) => {
    const where = [...use.where];
    const shown = where.length > MAX_PLACES ? `${where.slice(0, MAX_PLACES).join(', ')} and ${where.length - MAX_PLACES} more` : where.join(', ');
    return `${key} (${shown}): ${use.reason}`;
  });
}

/** Records the `warned` keys of `value` (a map, or a list of maps) and walks into those with tables of their own. */
function walk(value: unknown, table: KeywordTable, where: string, prefix: string, uses: Map<string, Use>): void {
  const items = Array.isArray(value) ? (value.flat(9) as unknown[]) : [value];
  for (const item of items) {
    if (!isMap(item)) continue;
    for (const [key, inner] of Object.entries(item)) {
      const keyword = table[key];
      if (keyword === undefined || inner === null || inner === undefined || inner === false) continue;
      const path = `${prefix}${key}`;
      if (keyword.support.status === 'warned') {
        const use = uses.get(path) ?? { reason: keyword.support.reason, where: new Set<string>() };
        use.where.add(where);
        uses.set(path, use);
      }
      if (keyword.keys !== undefined) walk(inner, keyword.keys, where, `${path}:`, uses);
    }
  }
}
