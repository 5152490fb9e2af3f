/**
 * The git commands of exec's snapshot, run on the user's repository with HOST_GIT_SETTINGS (no hooks,
 * no fsmonitor) and settings that keep git from writing anywhere but the snapshot's temp dir.
 *
 * Several commands run in one `sh` (`gitBatch`): each process this thread starts costs it ~6–9 ms
 * (execa's setup and the fork of a process of ~80 MB), while exec's start-up is bound by this
 * thread; a `sh` starting the same git processes costs it once, and they run on another core.
 */
import { randomBytes } from 'node:crypto';
import { shellQuote } from '../executors/common/quote.js';
import { gitSettingsEnv, HOST_GIT_SETTINGS } from '../git/host-config.js';
import { runCommand } from '../util/command.js';
import { CiRunnerError } from '../util/errors.js';

/** A directory that is not a git working tree, or a git step that failed: exit 2 (usage). */
export class SnapshotError extends CiRunnerError {
  readonly exitCode = 2;

  constructor(message: string, options?: { cause?: unknown }) {
    super('EXEC_SNAPSHOT_FAILED', message, options);
  }
}

/** Settings that keep git from writing anywhere but the temp dir, whatever the user's config says. */
const QUIET_CONFIG = ['-c', 'gc.auto=0', '-c', 'maintenance.auto=false', '-c', 'commit.gpgsign=false'];

/** What one command of a batch printed on standard output, and its exit status. */
export interface GitOutcome {
  code: number;
  stdout: string;
}

export interface BatchOptions {
  /** Added to the environment (after HOST_GIT_SETTINGS). */
  env?: Record<string, string>;
  signal?: AbortSignal;
  /** Stop at the first command that fails (later ones depend on it); theirs are then missing. */
  stopAtFailure?: boolean;
}

/** Named git commands (the arguments after `git`), run in the order they are written; an undefined one is left out. */
export type GitCommands<K extends string> = { readonly [P in K]?: readonly string[] };

export interface BatchResult<K extends string> {
  commands: GitCommands<K>;
  /** Each command's outcome; missing for those a `stopAtFailure` batch did not run. */
  outcomes: Partial<Record<K, GitOutcome>>;
  /** What the commands said on standard error, together. */
  stderr: string;
}

/**
 * Runs `git QUIET_CONFIG args` for each of `commands`, one after another in one `sh` in `cwd`. Rejects
 * when the shell cannot run or `signal` aborted it; a command that fails is an outcome.
 */
export async function gitBatch<K extends string>(cwd: string, commands: GitCommands<K>, options: BatchOptions = {}): Promise<BatchResult<K>> {
  const names = (Object.keys(commands) as K[]).filter((name) => commands[name] !== undefined);
  // A line no git output holds: each command's output ends with it and the command's exit status.
  const boundary = `ci-runner-${randomBytes(12).toString('hex')}`;
  const script = names
    .map((name) => commands[name] ?? [])
    .map((args) => {
      const run = `git ${[...QUIET_CONFIG, ...args].map(shellQuote).join(' ')}; s=$?; printf '\\n%s %s\\n' ${boundary} "$s"`;
      return options.stopAtFailure ? `${run}; [ "$s" = 0 ] || exit 0` : run;
    })
    .join('\n');
  // GIT_OPTIONAL_LOCKS=0: no opportunistic index refresh in the user's repository.
  const env = { ...gitSettingsEnv(HOST_GIT_SETTINGS), GIT_OPTIONAL_LOCKS: '0', GIT_TERMINAL_PROMPT: '0', ...options.env };
  const result = await runCommand('/bin/sh', ['-c', script], { cwd, env, ...(options.signal ? { signal: options.signal } : {}) });
  options.signal?.throwIfAborted();
  if (result.exitCode !== 0) {
    throw new SnapshotError(`cannot run git: ${result.originalMessage ?? result.shortMessage}`, { cause: result });
  }
  const parts = result.stdout.split(`\n${boundary} `);
  const outcomes: Partial<Record<K, GitOutcome>> = {};
  for (let i = 1; i < parts.length; i += 1) {
    const previous = parts[i - 1] ?? '';
    const name = names[i - 1];
    if (name !== undefined) outcomes[name] = { code: Number.parseInt(parts[i] ?? '', 10), stdout: i === 1 ? previous : previous.slice(previous.indexOf('\n') + 1) };
  }
  if (Object.values<GitOutcome | undefined>(outcomes).some((outcome) => outcome?.code === 127)) {
    throw new SnapshotError(`cannot run git: ${result.stderr.trim().split('\n')[0] ?? 'not found'}; is git installed?`);
  }
  return { commands, outcomes, stderr: result.stderr };
}

/** The output of command `name` when it succeeded, trimmed; undefined when it failed or did not run. */
export function succeeded<K extends string>(batch: BatchResult<K>, name: K): string | undefined {
  const outcome = batch.outcomes[name];
  return outcome?.code === 0 ? outcome.stdout.trim() : undefined;
}

/** The output of command `name`, which must succeed: else a `SnapshotError` with what git said. */
export function required<K extends string>(batch: BatchResult<K>, name: K, cwd: string): string {
  const output = succeeded(batch, name);
  if (output !== undefined) return output;
  const said = batch.stderr.trim();
  const code = batch.outcomes[name]?.code;
  throw new SnapshotError(`git ${(batch.commands[name] ?? []).join(' ')} failed in ${cwd}: ${said || (code === undefined ? 'it did not run' : `exit ${String(code)}`)}`);
}
