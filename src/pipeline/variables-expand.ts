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
