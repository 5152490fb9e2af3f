/**
 * Options a job may add to the runner's own git commands (GIT_CLEAN_FLAGS, GIT_FETCH_EXTRA_FLAGS,
 * GIT_CLONE_EXTRA_FLAGS, GIT_SUBMODULE_UPDATE_FLAGS). get_sources runs git on the runner's side — for
 * docker and kubernetes on the host, as the daemon's user — so these are an allowlist, per command, of
 * options that only change what git fetches, cleans or checks out in the checkout: none that names a
 * program (`--upload-pack`, `--exec`, `-u`), a setting (`-c`, `--config`), a file or repository outside
 * the checkout (`--template`, `--separate-git-dir`, `--reference`, `--bundle-uri`, `--stdin`), or that
 * makes git enter submodules the runner has not checked (`--recurse-submodules`, `--recursive`). The
 * value of an option that takes one is checked too, and a word that is not an option is refused (git
 * would read it as a path, a remote or a ref).
 *
 * The variables hold words split on whitespace, as GitLab Runner splits them (`none`: no options).
 */

/** A value an option takes, and how it is written: `--opt=v`, `--opt v`, `-o v`, `-ov`. */
type ValueCheck = (value: string) => boolean;

interface OptionSpec {
  /** Long names (without `--`) with no value. */
  flags: readonly string[];
  /** Long names (without `--`) that take a value, with its check. */
  valued: Readonly<Record<string, ValueCheck>>;
  /** Short letters with no value; clusters of them (`-ffdx`) are one word. */
  shortFlags: string;
  /** Short letters that take a value (the next word, or the rest of the word). */
  shortValued: Readonly<Record<string, ValueCheck>>;
}

const count: ValueCheck = (value) => /^\d{1,9}$/.test(value);
/** A word git reads as data: printable, no leading `-`. */
const plain: ValueCheck = (value) => value !== '' && !value.startsWith('-') && !/[\u0000-\u001f\u007f]/.test(value);
/** `--filter=<spec>`: blob:none, blob:limit=1m, tree:0, sparse:oid=<blob>, combine:…. */
const filterSpec: ValueCheck = (value) => /^(blob:none|blob:limit=\d+[kmg]?|tree:\d+|object:type=(blob|tree|commit|tag)|sparse:oid=[\w./^:~-]+|combine:[\w:=+%./-]+)$/i.test(value);
const date: ValueCheck = (value) => /^[\w:.+ -]{1,64}$/.test(value) && !value.startsWith('-');

/** What each command accepts. */
export const JOB_GIT_OPTIONS = {
  clean: {
    flags: ['force', 'quiet', 'dry-run'],
    valued: { exclude: plain },
    shortFlags: 'fdxXqn',
    shortValued: { e: plain },
  },
  fetch: {
    flags: [
      'all', 'append', 'atomic', 'force', 'keep', 'prune', 'no-prune', 'prune-tags', 'no-prune-tags', 'tags', 'no-tags', 'quiet', 'verbose',
      'progress', 'no-progress', 'unshallow', 'update-shallow', 'no-recurse-submodules', 'ipv4', 'ipv6', 'no-write-fetch-head', 'write-fetch-head',
      'show-forced-updates', 'no-show-forced-updates', 'auto-gc', 'no-auto-gc', 'auto-maintenance', 'no-auto-maintenance', 'write-commit-graph',
      'no-write-commit-graph', 'refetch', 'porcelain', 'update-head-ok', 'dry-run', 'no-auto-follow-tags',
    ],
    valued: { depth: count, deepen: count, 'shallow-since': date, 'shallow-exclude': plain, filter: filterSpec, jobs: count, 'server-option': plain, 'negotiation-tip': plain },
    shortFlags: 'afkpPqtvn46',
    shortValued: { j: count, o: plain },
  },
  clone: {
    flags: [
      'quiet', 'verbose', 'progress', 'no-progress', 'no-checkout', 'single-branch', 'no-single-branch', 'no-tags', 'tags', 'shallow-submodules',
      'no-shallow-submodules', 'dissociate', 'sparse', 'reject-shallow', 'no-reject-shallow', 'ipv4', 'ipv6', 'no-hardlinks', 'also-filter-submodules',
    ],
    valued: { depth: count, 'shallow-since': date, 'shallow-exclude': plain, filter: filterSpec, jobs: count, 'server-option': plain },
    shortFlags: 'qvn46',
    shortValued: { j: count },
  },
  'submodule update': {
    flags: ['remote', 'checkout', 'merge', 'rebase', 'force', 'no-fetch', 'recommend-shallow', 'no-recommend-shallow', 'single-branch', 'no-single-branch', 'quiet', 'progress', 'init', 'dissociate'],
    valued: { depth: count, jobs: count, filter: filterSpec },
    shortFlags: 'fNq',
    shortValued: { j: count },
  },
} satisfies Record<string, OptionSpec>;

export type JobGitCommand = keyof typeof JOB_GIT_OPTIONS;

/** A word of a flags variable the allowlist refuses; its message names the variable and the word. */
export class RefusedGitOption extends Error {
  readonly code = 'REFUSED_GIT_OPTION';
  constructor(
    readonly variable: string,
    readonly option: string,
    command: JobGitCommand,
  ) {
    super(`${variable}: the runner's git does not take "${option}" from a job (git ${command} options that run programs, read config or reach files outside the checkout are refused; see docs/jobs.md, "Getting the sources")`);
  }
}

/**
 * `words` checked against `command`'s allowlist; returns them as they are. Throws RefusedGitOption
 * for the first word refused.
 */
export function checkJobGitOptions(variable: string, command: JobGitCommand, words: readonly string[]): string[] {
  const spec: OptionSpec = JOB_GIT_OPTIONS[command];
  const refuse = (word: string): never => {
    throw new RefusedGitOption(variable, word, command);
  };
  for (let i = 0; i < words.length; i += 1) {
    const word = words[i]!;
    if (word.startsWith('--')) {
      const eq = word.indexOf('=');
      const name = word.slice(2, eq < 0 ? undefined : eq);
      const check = spec.valued[name];
      if (check) {
        const value = eq < 0 ? words[(i += 1)] : word.slice(eq + 1);
        if (value === undefined || !check(value)) refuse(eq < 0 ? `${word} ${value ?? ''}`.trim() : word);
      } else if (eq >= 0 || !spec.flags.includes(name)) refuse(word);
    } else if (word.startsWith('-') && word.length > 1) {
      // A cluster of short flags, the last of which may take a value (`-j4`, `-j 4`, `-e node_modules`).
      for (let at = 1; at < word.length; at += 1) {
        const letter = word[at]!;
        const check = spec.shortValued[letter];
        if (check) {
          const rest = word.slice(at + 1);
          const value = rest !== '' ? rest : words[(i += 1)];
          if (value === undefined || !check(value)) refuse(rest !== '' ? word : `${word} ${value ?? ''}`.trim());
          break;
        }
        if (!spec.shortFlags.includes(letter)) refuse(word);
      }
    } else refuse(word);
  }
  return [...words];
}
