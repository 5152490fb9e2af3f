/**
 * A command name that is not ours gets a message saying what to do instead of yargs' full help:
 * a GitLab Runner command we do not have says why and what replaces it, a typo gets the nearest
 * name. Both exit 2 (bad usage).
 */

const HELPER = 'is a command of GitLab Runner\'s helper image, which jobs\' containers run; ci-runner does that step itself inside each job, so there is no such command';

/**
 * GitLab Runner's commands that ci-runner does not have, and what to use instead. (Its helper's
 * artifacts-* and cache-* commands exist: the custom executor's drivers call them.)
 */
export const GITLAB_ONLY_COMMANDS: Readonly<Record<string, string>> = {
  'cache-init': HELPER,
  'health-check': HELPER,
  'read-logs': HELPER,
  'proxy-exec': HELPER,
  lint: 'is not available: the coordinator checks .gitlab-ci.yml when a pipeline is created (`ci-runner serve` answers 400 with the problem)',
  fleeting: 'manages autoscaling plugins, which ci-runner does not have',
  wrapper: 'is GitLab Runner\'s gRPC process wrapper, which ci-runner does not have',
  socket: 'is not available in ci-runner',
  steps: 'runs CI steps, which ci-runner does not support',
  'boot-verify': 'is not available; `ci-runner verify` checks the configured runners with the coordinator',
};

/** The nearest known name within two edits. */
function nearest(name: string, known: readonly string[]): string | undefined {
  let best: { name: string; d: number } | undefined;
  for (const candidate of known) {
    const d = editDistance(name.toLowerCase(), candidate);
    if (d <= 2 && (!best || d < best.d)) best = { name: candidate, d };
  }
  return best?.name;
}

/** Levenshtein distance, one row at a time. */
function editDistance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i += 1) {
    const next = [i];
    for (let j = 1; j <= b.length; j += 1) {
      next[j] = Math.min((row[j] ?? 0) + 1, (next[j - 1] ?? 0) + 1, (row[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    row = next;
  }
  return row[b.length] ?? 0;
}

/** What to tell the user about `name`, or undefined when it is one of `known`. */
export function unknownCommandMessage(name: string, known: readonly string[]): string | undefined {
  if (known.includes(name)) return undefined;
  const gitlab = GITLAB_ONLY_COMMANDS[name];
  if (gitlab) return `ci-runner: \`${name}\` ${gitlab}. \`ci-runner --help\` lists the commands.`;
  const guess = nearest(name, known);
  return `ci-runner: unknown command "${name}"${guess ? `; did you mean \`ci-runner ${guess}\`?` : ''} \`ci-runner --help\` lists the commands.`;
}

/** Options taking a value that may come before the command (`ci-runner -l debug run`). */
const GLOBAL_WITH_VALUE = new Set(['--log-level', '-l', '--log-format', '--cpuprofile']);

/** The command word of `argv`: the first argument that is not a global option or its value. */
export function commandWord(argv: readonly string[]): string | undefined {
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i] ?? '';
    if (GLOBAL_WITH_VALUE.has(arg)) i += 1;
    else if (arg === '--') return argv[i + 1];
    else if (!arg.startsWith('-')) return arg;
  }
  return undefined;
}

/**
 * yargs' "Unknown argument(s): x, y" without the camelCase copies it adds, with the nearest of the
 * options named in the command's `help` text for each; other messages unchanged.
 */
export function unknownArgumentsMessage(message: string, help: string): string {
  const match = /^Unknown arguments?: (.*)$/.exec(message);
  if (!match) return message;
  const given = (match[1] ?? '').split(', ');
  const names = given.filter((name) => !/[A-Z]/.test(name) || !given.includes(name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)));
  const options = [...new Set([...help.matchAll(/--([a-z0-9][a-z0-9-]*)/g)].map((m) => m[1] ?? ''))];
  const parts = names.map((name) => {
    const guess = nearest(name, options);
    return `${name.length === 1 ? '-' : '--'}${name}${guess ? ` (did you mean --${guess}?)` : ''}`;
  });
  return `Unknown argument${parts.length === 1 ? '' : 's'}: ${parts.join(', ')}`;
}
