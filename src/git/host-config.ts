/**
 * Settings every git process the runner starts on its own side gets (get_sources, submodules, the
 * untracked-files listing of artifacts, `exec`'s snapshot). They travel as GIT_CONFIG_COUNT /
 * GIT_CONFIG_KEY_n / GIT_CONFIG_VALUE_n: git reads them as command-line settings, which beat every
 * config file (system, global, the repository's and anything it includes), and child git processes
 * (submodule clones, `submodule foreach`) inherit them.
 *
 * What they switch off is what a checkout's own `.git` could otherwise make git run: hooks (a
 * `core.hooksPath` pointing at no directory at all, so neither `.git/hooks` nor a hooks path in any
 * config is looked at), the fsmonitor program, signature programs (`log.showSignature` would make
 * `exec`'s `git log` run `gpg.program` on a signed HEAD; nothing here signs or verifies, so every
 * `gpg.*.program` points at no program too), credential helpers and askpass programs (credentials
 * travel in git's environment; the runner machine's own are never offered), templates copied into
 * new repositories, recursion into submodules whose link files the runner has not checked yet, and
 * transports that run programs or read arbitrary local repositories (`ext::`, and `file://` for
 * submodule URLs, which come from the repository's content).
 *
 * Settings that name a program but cannot be beaten from here, or only by breaking the runner's own
 * setup, are the other half, and come from the repository config alone in what the runner's git
 * does: filter and merge drivers, `core.sshCommand`, `core.gitProxy`, `remote.*.uploadpack`,
 * `url.*.insteadOf`, `credential.<url>.helper` (a URL-specific helper outranks a plain
 * `credential.helper`, wherever each is set), includes, `core.worktree`. For get_sources,
 * checkout-guard.ts rewrites that config before git reads it (and `git submodule init` copies no
 * `!command` update mode from `.gitmodules`). The untracked-files listing and `exec`'s snapshot run
 * in a repository whose config is not rewritten, but use no transport and no driver: `ls-files -o`,
 * `rev-parse`, `symbolic-ref`, `config` and `log -1 --format` (no patch, so no `diff.external` or
 * textconv) run none of them, and `exec`'s `git add` reads its own repository's config. Settings git
 * honours only from the system and global config (`uploadpack.packObjectsHook`, `trace2.*`) are the
 * runner machine's; `core.alternateRefsCommand` is read from the repository doing a fetch, whose
 * alternates the guard removes; `core.pager` and editors need a terminal, which these gits lack.
 */

/** A git setting as a key and its value. */
export type GitSetting = readonly [key: string, value: string];

/** The settings above; see the module comment for why each is there. */
export const HOST_GIT_SETTINGS: readonly GitSetting[] = [
  // /dev/null is not a directory: git finds no hook in it, whatever `.git/hooks` holds.
  ['core.hooksPath', '/dev/null'],
  ['core.fsmonitor', 'false'],
  ['log.showSignature', 'false'],
  ...['gpg.program', 'gpg.openpgp.program', 'gpg.x509.program', 'gpg.ssh.program'].map((key): GitSetting => [key, '/dev/null']),
  // An empty value empties the helper list built so far, from every config file.
  ['credential.helper', ''],
  // Empty: no askpass from any config (git then skips SSH_ASKPASS too) and, with GIT_TERMINAL_PROMPT=0, no prompt.
  ['core.askPass', ''],
  // New repositories (clones, submodule clones) get no hooks/ or info/ from a template dir.
  ['init.templateDir', ''],
  // git enters a submodule only when the runner asks it to, after its link file is checked.
  ['submodule.recurse', 'false'],
  ['fetch.recurseSubmodules', 'false'],
  ['protocol.ext.allow', 'never'],
  // `user`: allowed for the URL the coordinator gives, refused for submodule URLs (git's default since 2.38.1).
  ['protocol.file.allow', 'user'],
  // A `refs/replace/<sha>` a job planted would swap the commit the next job checks out.
  ['core.useReplaceRefs', 'false'],
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
