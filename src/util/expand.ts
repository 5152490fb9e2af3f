/**
 * The runner's `$NAME` / `${NAME}` expansion, as GitLab Runner expands job variables: one pass, an
 * unknown name or a positional/special parameter (`$1`, `$*`, `$?`) becomes empty, `$$` becomes `$`.
 * The job's variables (agent/job/variables.ts) and the docker executor's image and service names use
 * it; the pipeline engine has its own (pipeline/variables-expand.ts), as the server does not share
 * the runner's code.
 */

const REFERENCE = /\$(?:(\$)|\{([^}]*)\}|([A-Za-z_][A-Za-z0-9_]*)|([0-9*#?@!-]))/g;

/** Expands references in one string with `lookup`. */
export function expandString(text: string, lookup: (name: string) => string): string {
  return text.replace(REFERENCE, (_m, dollar: string | undefined, braced: string | undefined, bare: string | undefined) => {
    if (dollar) return '$';
    const name = braced ?? bare;
    return name && /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) ? lookup(name) : '';
  });
}
