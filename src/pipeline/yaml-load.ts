/**
 * YAML text of a `.gitlab-ci.yml` (or a file it includes) to plain values. `!reference [job, key]`
 * tags come out as `ReferenceTag` markers, resolved once includes and `extends` are merged
 * (`reference.ts`), which is when GitLab resolves them too.
 */
import { isScalar, LineCounter, parseAllDocuments, visit, YAMLSeq, type CollectionTag, type Document } from 'yaml';
import { interpolate, readInputSpecs, resolveInputs } from './inputs.js';
import type { InputValues } from './spec.js';
import { PipelineConfigError } from './parse-error.js';
import { isMap, type YamlMap } from './parse-values.js';

/** A `!reference [.setup, script]` not yet resolved: the path of keys it points at. */
export class ReferenceTag {
  constructor(readonly path: readonly string[]) {}
}

const referenceTag: CollectionTag = {
  tag: '!reference',
  collection: 'seq',
  resolve(value, onError) {
    const items = value instanceof YAMLSeq ? value.items : [];
    const path = items.map((item) => (isScalar(item) && (typeof item.value === 'string' || typeof item.value === 'number') ? String(item.value) : ''));
    if (path.length === 0 || path.includes('')) onError('!reference must be a list of keys, such as !reference [.setup, script]');
    const marker = new YAMLSeq();
    // `toJS` calls toJSON on a node: the marker stands in for the list until it is resolved.
    Object.defineProperty(marker, 'toJSON', { value: () => new ReferenceTag(path) });
    return marker;
  },
};

/** What a file's `spec: inputs:` header is given: the include's `inputs:` and the variables `expand_vars` may read. */
export interface InputsGiven {
  values?: InputValues;
  variables: Readonly<Record<string, string>>;
}

/**
 * Parses `text` (from `file`, for messages about included files) into a map. Throws
 * `PipelineConfigError` with the line and column of a syntax error. A key written twice in one map
 * is not an error: as GitLab does, the last one wins, and a line saying so goes to `warnings`.
 * A file may start with a header document (`spec: inputs:` then `---`): its inputs are resolved from
 * `inputs` and interpolated into the rest (`inputs.ts`).
 */
export function loadYaml(text: string, file?: string, warnings?: string[], inputs?: InputsGiven): YamlMap {
  const of = file === undefined ? '' : ` in ${file}`;
  const name = file ?? 'the pipeline file';
  const lines = new LineCounter();
  // Merge keys (`<<: *defaults`) are YAML 1.1, but every .gitlab-ci.yml relies on them.
  const docs = parseAllDocuments(text, { merge: true, prettyErrors: true, customTags: [referenceTag], uniqueKeys: false, lineCounter: lines });
  const list = Array.isArray(docs) ? docs : [];
  const headerDoc = list.length === 2 ? list[0] : undefined;
  if (headerDoc !== undefined) checkDocument(headerDoc, lines, of, warnings, file);
  const header = headerDoc === undefined ? undefined : toValue(headerDoc, of);
  if (list.length > 2 || (header !== undefined && !(isMap(header) && Object.keys(header).every((key) => key === 'spec')))) {
    throw new PipelineConfigError(`invalid YAML${of}: a file holds one document, or a header document with spec: only, then --- and the configuration`);
  }
  const doc = list.at(-1);
  if (doc !== undefined) checkDocument(doc, lines, of, warnings, file);
  let value = doc === undefined ? null : toValue(doc, of);
  if (value === null || value === undefined) {
    throw new PipelineConfigError(file === undefined ? 'the pipeline is empty: add at least one job with a script' : `${file} is empty`);
  }
  if (!isMap(value)) {
    throw new PipelineConfigError(`${file ?? 'the pipeline'} must be a YAML map of job names (and global keys) to their settings`);
  }
  const given = inputs?.values ?? {};
  if (isMap(header)) {
    const { values, errors } = resolveInputs(readInputSpecs(header, name), given);
    if (errors.length > 0) throw new PipelineConfigError(`${name}: ${errors.join(', ')}`, { key: 'include:inputs' });
    value = interpolate(value, { inputs: values, variables: inputs?.variables ?? {} }, name) as YamlMap;
  } else if (Object.keys(given).length > 0) {
    throw new PipelineConfigError(`${name}: given inputs not defined in the \`spec\` section of the included configuration file`, { key: 'include:inputs' });
  }
  return value as YamlMap;
}

/** Syntax errors and misplaced `!reference` tags of `doc`; keys written twice go to `warnings`. */
function checkDocument(doc: Document, lines: LineCounter, of: string, warnings: string[] | undefined, file: string | undefined): void {
  if (warnings) warnings.push(...duplicateKeys(doc, lines, file ?? 'the pipeline file'));
  // A `!reference` on a map is only a warning to the YAML parser; for a pipeline it is an error.
  const misplaced = doc.warnings.find((warning) => warning.code === 'TAG_RESOLVE_FAILED' && warning.message.includes('!reference'));
  const [error] = [...doc.errors, ...(misplaced ? [misplaced] : [])];
  if (error !== undefined) {
    const position = error.linePos?.[0];
    const reason = (error.message.split('\n')[0] ?? error.message).replace(/ at line \d+, column \d+:?$/, '');
    const where = position === undefined ? '' : ` at line ${position.line}, column ${position.col}`;
    throw new PipelineConfigError(`invalid YAML${of}${where}: ${reason}`, {}, { cause: error });
  }
}

function toValue(doc: Document, of: string): unknown {
  if (doc.errors.length > 0) return undefined;
  try {
    // The alias limit guards against "billion laughs" documents that expand to gigabytes.
    return doc.toJS({ maxAliasCount: 100 });
  } catch (cause) {
    throw new PipelineConfigError(`invalid YAML${of}: ${(cause as Error).message}`, {}, { cause });
  }
}

/** One line per key that a map repeats (merge keys `<<` aside: repeating them is how several are merged). */
function duplicateKeys(doc: Document, lines: LineCounter, file: string): string[] {
  const found: string[] = [];
  visit(doc, {
    Map(_key, map) {
      const seen = new Set<unknown>();
      for (const item of map.items) {
        if (!isScalar(item.key) || item.key.value === '<<') continue;
        if (seen.has(item.key.value)) {
          const line = item.key.range ? ` (line ${lines.linePos(item.key.range[0]).line})` : '';
          found.push(`${file}: key '${String(item.key.value)}' is written twice in one map${line}; the last one is used`);
        }
        seen.add(item.key.value);
      }
    },
  });
  return found;
}
