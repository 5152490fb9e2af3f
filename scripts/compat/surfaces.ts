/**
 * The rows of each compatibility surface but the command line (cli.ts), read from the tables the
 * code itself uses: the config loader's key tables, the executors, the control variables, the
 * feature flags, `info.features`, the stages, the metrics and the `.gitlab-ci.yml` keywords.
 */
import type { KeyTable } from '../../src/agent/config/keys.js';
import { GLOBAL_KEYS } from '../../src/agent/config/schema.js';
import { EXECUTORS, SHELLS } from '../../src/agent/config/runner-schema.js';
import { CONTROL_VARIABLES } from '../../src/agent/job/control-table.js';
import { FEATURE_FLAGS } from '../../src/agent/config/feature-flags.js';
import { FEATURES } from '../../src/protocol/v4/features.js';
import { STAGES } from '../../src/executors/common/stages.js';
import { GITLAB_RUNNER_METRICS, OWN_METRICS } from '../../src/agent/metrics/names.js';
import { GLOBAL_KEYWORDS, JOB_KEYWORDS, type KeywordTable } from '../../src/pipeline/keywords.js';
import type { Support } from '../../src/util/compat.js';
import { code, type Row } from './markdown.js';

const ORIGIN: Readonly<Record<string, string>> = { ours: "ci-runner's own", older: 'an older GitLab Runner' };

/** Every key of config.toml, by its dotted path (an array of tables without an index). */
export function configKeyRows(table: KeyTable = GLOBAL_KEYS, path = ''): Row[] {
  return Object.entries(table.keys).flatMap(([name, entry]) => {
    const at = path === '' ? name : `${path}.${name}`;
    const row: Row = { name: at, support: entry.support, cells: [entry.origin ? (ORIGIN[entry.origin] ?? entry.origin) : 'GitLab Runner 19'] };
    return [row, ...(entry.table ? configKeyRows(entry.table, at) : [])];
  });
}

function valueRows(values: Readonly<Record<string, Support>>): Row[] {
  return Object.entries(values).map(([name, support]) => ({ name, support }));
}

export const executorRows = (): Row[] => valueRows(EXECUTORS);
export const shellRows = (): Row[] => valueRows(SHELLS);

export function controlVariableRows(): Row[] {
  return CONTROL_VARIABLES.map((v) => ({ name: v.prefix ? `${v.name}*` : v.name, support: v.support, cells: [v.default, v.accepts] }));
}

export function featureFlagRows(): Row[] {
  return FEATURE_FLAGS.map((f) => ({ name: f.name, support: f.support, cells: [String(f.default), f.ours === undefined ? '' : String(f.ours)] }));
}

export function featureRows(): Row[] {
  const executors = Object.entries(EXECUTORS).filter(([, support]) => support.status === 'honoured').map(([name]) => name);
  return Object.entries(FEATURES).map(([name, entry]) => ({
    name,
    support: entry.support,
    cells: [executors.filter((executor) => entry.announced(executor)).join(', ') || 'none'],
  }));
}

export function stageRows(): Row[] {
  return STAGES.map((stage) => ({
    name: stage.name,
    support: stage.support,
    cells: [stage.description, stage.site, 'attempts' in stage && stage.attempts ? code(stage.attempts) : '', stage.timeout.note],
  }));
}

export function metricRows(): Row[] {
  return [...GITLAB_RUNNER_METRICS.map((m) => ({ m, whose: 'GitLab Runner 19' })), ...OWN_METRICS.map((m) => ({ m, whose: "ci-runner's own" }))].map(({ m, whose }) => ({
    name: m.name,
    support: m.support,
    cells: [m.type, m.labels.join(', '), whose],
  }));
}

/** Every keyword, top-level ones by name and a job's under `<job>.`; a table met again on its own path is not walked twice. */
export function keywordRows(): Row[] {
  const seen = new Set<KeywordTable>();
  const walk = (table: KeywordTable, path: string): Row[] => {
    if (seen.has(table)) return [];
    seen.add(table);
    const rows = Object.entries(table).flatMap(([name, keyword]) => {
      const at = path === '' ? name : `${path}:${name}`;
      return [{ name: at, support: keyword.support } as Row, ...(keyword.keys ? walk(keyword.keys, at) : [])];
    });
    seen.delete(table);
    return rows;
  };
  return [...walk(GLOBAL_KEYWORDS, ''), ...walk(JOB_KEYWORDS, '<job>')];
}
