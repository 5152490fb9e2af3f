/**
 * "not applied locally": the keywords a pipeline uses that this engine accepts but does not apply
 * (`warned` in `keywords.ts`), found by walking the merged configuration through the keyword tables —
 * the global keys, `default:` and every job (hidden `.templates` are not jobs). One line per keyword,
 * naming where it is used and why it has no effect here, so nothing is ignored silently; once the
 * rules have chosen the jobs, only those that run are named.
 */
import { DEFAULT_KEYWORDS, GLOBAL_KEYWORDS, JOB_KEYWORDS, type KeywordTable } from './keywords.js';
import { isMap, type YamlMap } from './parse-values.js';
import type { JobSpec, NotAppliedUse } from './spec.js';

/** Places named per keyword; the rest are counted. */
const MAX_PLACES = 5;

/** Every keyword the pipeline uses that is not applied, with every place it is used. */
export function notAppliedUses(root: YamlMap): NotAppliedUse[] {
  const uses = new Map<string, NotAppliedUse>();
  for (const [name, value] of Object.entries(root)) {
    if (name === 'default') walk(value, DEFAULT_KEYWORDS, { label: 'default' }, 'default:', uses);
    else if (Object.hasOwn(GLOBAL_KEYWORDS, name)) walk({ [name]: value }, GLOBAL_KEYWORDS, { label: name }, '', uses);
    else if (!name.startsWith('.') && isMap(value)) walk(value, JOB_KEYWORDS, { label: `job ${name}`, job: name }, '', uses);
  }
  return [...uses.values()];
}

/**
 * One line per keyword that is not applied, `secrets (job deploy, job release): <reason>`, naming only
 * the jobs of `jobs` (those that run; a parallel job by its name in the file) when given: a keyword
 * used only by jobs that do not run is not mentioned.
 */
export function notAppliedLines(uses: readonly NotAppliedUse[], jobs?: readonly JobSpec[]): string[] {
  const running = jobs === undefined ? undefined : new Set(jobs.map((job) => job.parallel?.name ?? job.name));
  return uses.flatMap((use) => {
    const where = use.where.filter((place) => place.job === undefined || running === undefined || running.has(place.job)).map((place) => place.label);
    if (where.length === 0) return [];
    const shown = where.length > MAX_PLACES ? `${where.slice(0, MAX_PLACES).join(', ')} and ${where.length - MAX_PLACES} more` : where.join(', ');
    return [`${use.key} (${shown}): ${use.reason}`];
  });
}

/** Records the `warned` keys of `value` (a map, or a list of maps) and walks into those with tables of their own. */
function walk(value: unknown, table: KeywordTable, place: { label: string; job?: string }, prefix: string, uses: Map<string, NotAppliedUse>): void {
  const items = Array.isArray(value) ? (value.flat(9) as unknown[]) : [value];
  for (const item of items) {
    if (!isMap(item)) continue;
    for (const [key, inner] of Object.entries(item)) {
      const keyword = table[key];
      if (keyword === undefined || inner === null || inner === undefined || inner === false) continue;
      const path = `${prefix}${key}`;
      if (keyword.support.status === 'warned') {
        const use = uses.get(path) ?? { key: path, reason: keyword.support.reason, where: [] };
        if (!use.where.some((known) => known.label === place.label)) use.where.push(place);
        uses.set(path, use);
      }
      if (keyword.keys !== undefined) walk(inner, keyword.keys, place, `${path}:`, uses);
    }
  }
}
