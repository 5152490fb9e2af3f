/**
 * Settings every git process the runner starts on its own side gets (get_sources, submodules, the
 * untracked-files listing of artifacts, `exec`'s snapshot). They travel as GIT_CONFIG_COUNT /
 * GIT_CONFIG_KEY_n / GIT_CONFIG_VALUE_n: git reads them as command-line settings, which beat every
 * config file (system, global, the repository's and anything it includes), and child git processes
 * (submodule clones, `submodule foreach`) inherit them.
 *
 * What they switch off is what a checkout's own `.git` could otherwise make git run: hooks (a
 * `core.hooksPath` pointing at no directory at all, so neither `.git/hooks` nor a hooks path in any
 * config is looked at), the fsmonitor program, templates copied into new repositories, recursion
 * into submodules whose link files the runner has not checked yet, and transports that run
 * programs or read arbitrary local repositories (`ext::`, and `file://` for submodule URLs, which
 * come from the repository's content). Filters, diff drivers, helpers and includes named by the
 * repository's own config are the other half: checkout-guard.ts rewrites that config before git
 * reads it.
 */

/** A git setting as a key and its value. */
export type GitSetting = readonly [key: string, value: string];

/** The settings above; see the module comment for why each is there. */
export const HOST_GIT_SETTINGS: readonly GitSetting[] = [
  // /dev/null is not a directory: git finds no hook in it, whatever `.git/hooks` holds.
  ['core.hooksPath', '/dev/null'],
  ['core.fsmonitor', 'false'],
  // New repositories (clones, submodule clones) get no hooks/ or info/ from a template dir.
  ['init.templateDir', ''],
  // git enters a submodule only when the runner asks it to, after its link file is checked.
  ['submodule.recurse', 'false'],
  ['fetch.recurseSubmodules', 'false'],
  ['protocol.ext.allow', 'never'],
  // `user`: allowed for the URL the coordinator gives, refused for submodule URLs (git's default since 2.38.1).
  ['protocol.file.allow', 'user'],
];

/**
 * Environment variables that give git `settings` as command-line settings (they replace any
 * GIT_CONFIG_COUNT the process had; for one key set twice, the later one wins).
 */
export function gitSettingsEnv(settings: readonly GitSetting[]): Record<string, string> {
  const env: Record<string, string> = { GIT_CONFIG_COUNT: String(settings.length) };
  settings.forEach(([key, value], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = key;
    env[`GIT_CONFIG_VALUE_${i}`] = value;
  });
  return env;
}
