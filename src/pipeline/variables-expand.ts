/**
 * `$VAR` and `${VAR}` in the places GitLab expands them before jobs run (include paths, `changes`
 * and `exists` patterns). An unknown variable becomes empty, as in a shell; `$$` is a literal `$`.
 */
export function expandVariables(text: string, variables: Readonly<Record<string, string>>): string {
  return text.replace(/\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)/g, (whole, braced?: string, bare?: string) => {
    if (whole === '$$') return '$';
    const name = braced ?? bare ?? '';
    return Object.hasOwn(variables, name) ? (variables[name] ?? '') : '';
  });
}

/** A variable as GitLab's `Ci::Variables::Collection` holds it: `raw` ones are never expanded. */
export interface CollectedVariable {
  key: string;
  value: string;
  raw?: boolean;
}

/** `$NAME`, `${NAME}` or `%NAME%` (GitLab's `ExpandVariables::VARIABLES_REGEXP`). */
const REFERENCE = /\$([A-Za-z_][A-Za-z0-9_]*)|\$\{([A-Za-z_][A-Za-z0-9_]*)\}|%([A-Za-z_][A-Za-z0-9_]*)%/g;
/** The same, or an escape (`$$`, `%%`) left as written (`Collection::Item::VARIABLES_REGEXP`). */
const REFERENCE_OR_ESCAPE = /\$\$|%%|\$([A-Za-z_][A-Za-z0-9_]*)|\$\{([A-Za-z_][A-Za-z0-9_]*)\}|%([A-Za-z_][A-Za-z0-9_]*)%/g;

/**
 * GitLab's `ExpandVariables.expand`: each reference replaced by the variable's value, an unknown one
 * by nothing. No escapes: `$$` is not special here (GitLab expands `id_tokens: aud` this way).
 */
export function expandReferences(text: string, variables: Readonly<Record<string, string>>): string {
  return text.replace(REFERENCE, (_whole, a?: string, b?: string, c?: string) => {
    const name = a ?? b ?? c ?? '';
    return Object.hasOwn(variables, name) ? (variables[name] ?? '') : '';
  });
}

/**
 * A job's variables expanded among themselves, as GitLab's `Collection#sort_and_expand_all` does
 * before it expands a value with them: the last of a name wins, each value that is not `raw` has its
 * references replaced by the (expanded) values they name, unknown ones by nothing, `$$` and `%%` kept.
 * A reference cycle leaves every value as it is, as GitLab leaves the collection.
 */
export function expandAmongThemselves(collected: readonly CollectedVariable[]): Record<string, string> {
  const byKey = new Map<string, CollectedVariable>();
  for (const variable of collected) byKey.set(variable.key, variable);
  const done = new Map<string, string>();
  const visiting = new Set<string>();
  let cycle = false;
  const resolve = (key: string): string | undefined => {
    const variable = byKey.get(key);
    if (!variable) return undefined;
    const known = done.get(key);
    if (known !== undefined) return known;
    if (variable.raw === true) return variable.value;
    if (visiting.has(key)) {
      cycle = true;
      return '';
    }
    visiting.add(key);
    const value = variable.value.replace(REFERENCE_OR_ESCAPE, (whole, a?: string, b?: string, c?: string) => {
      const name = a ?? b ?? c;
      return name === undefined ? whole : (resolve(name) ?? '');
    });
    visiting.delete(key);
    done.set(key, value);
    return value;
  };
  for (const key of byKey.keys()) resolve(key);
  return Object.fromEntries([...byKey].map(([key, variable]) => [key, cycle ? variable.value : (done.get(key) ?? variable.value)]));
}
