/**
 * Builds one stage's script (docs/protocol-v1.md §9.2): strict mode, exported variables, `cd` into the work
 * dir, then each command — echoed in green as `$ cmd` first when it is a user command. Values are
 * exported literally (the runner expanded them already), so nothing in a value is re-interpreted.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { writeNewFile } from '../../util/new-file.js';
import type { ChainedStages, ExportedVariable, StageRequest } from '../types.js';
import { isExportableName, shellQuote } from './quote.js';

export type ShellName = 'bash' | 'sh';

export interface ScriptOptions {
  shell: ShellName;
  variables: ExportedVariable[];
  workDir: string;
  commands: string[];
  echoCommands: boolean;
  debugTrace?: boolean;
  /** FF_SCRIPT_SECTIONS: the prefix of the sections' names (StageRequest.scriptSections). */
  scriptSections?: string;
  /** A line that must run before anything else (the shell executor's move into the job cgroup). */
  firstLine?: string;
}

const GREEN = '\\033[32;1m';
const RESET = '\\033[0;m';
/** The shell's clock in Unix seconds, for log section markers: bash 5's variable, else date(1). */
const UNIX_TIME = '"${EPOCHSECONDS:-$(date +%s)}"';

/**
 * The echo of a command, as GitLab Runner's scripts print it: `$ <command>` in green; a command of
 * several lines as its first line and `# collapsed multi-line command`, or with FF_SCRIPT_SECTIONS a
 * collapsed log section whose heading is the whole command (its output follows the section).
 */
function echoLines(command: string, options: ScriptOptions, index: number): string[] {
  const newline = command.indexOf('\n');
  if (newline < 0) return [`printf '${GREEN}$ %s${RESET}\\n' ${shellQuote(command)}`];
  if (options.scriptSections === undefined) return [`printf '${GREEN}$ %s # collapsed multi-line command${RESET}\\n' ${shellQuote(command.slice(0, newline))}`];
  const name = shellQuote(`section_${options.scriptSections}_${index}`);
  return [
    `printf 'section_start:%s:%s[hide_duration=true,collapsed=true]\\r\\033[0K${GREEN}$ %s${RESET}\\n' ${UNIX_TIME} ${name} ${shellQuote(command)}`,
    `printf 'section_end:%s:%s\\r\\033[0K\\n' ${UNIX_TIME} ${name}`,
  ];
}

/** Returns the script text. Later variables with the same name win (they are exported later). */
export function generateScript(options: ScriptOptions): string {
  const out: string[] = options.firstLine ? [options.firstLine] : [];
  if (options.shell === 'bash') out.push('set -eo pipefail');
  else out.push('set -e', '(set -o pipefail) 2>/dev/null && set -o pipefail');
  // One pipe for both streams keeps stdout and stderr lines in the order they were written.
  out.push('exec 2>&1', 'set +o noclobber');
  for (const { key, value } of options.variables) {
    if (isExportableName(key)) out.push(`export ${key}=${shellQuote(value)}`);
  }
  out.push(`cd ${shellQuote(options.workDir)}`);
  if (options.debugTrace) out.push('set -o xtrace');
  options.commands.forEach((raw, index) => {
    const command = raw.trim();
    if (command === '') return;
    if (options.echoCommands) out.push(...echoLines(command, options, index));
    out.push(command);
  });
  out.push('exit 0', '');
  return out.join('\n');
}

/**
 * The script of two chained stages (ChainedStages): the first runs in a subshell as its own script
 * would (strict mode, exports and `cd` stay in it), without fd 3; when it exits 0, `between` is
 * printed, a line on fd 3 tells the runner the second began, and the shell execs the second's own
 * script file (`secondPath`) without fd 3, so the second is the process the runner started, with
 * the environment the runner gave, as if started alone. Else the chain exits with the first's status.
 */
export function generateChainScript(options: ScriptOptions & { secondPath: string; between: ChainedStages['between'] }): string {
  const { firstLine, secondPath, between, ...first } = options;
  const builtin = options.shell === 'bash' ? 'builtin ' : '';
  // The text between, its time the shell's when the second stage starts.
  const at = '\u0000';
  const text = between(at).split(at).map(shellQuote).join(UNIX_TIME);
  return [
    ...(firstLine ? [firstLine] : []),
    '(',
    generateScript({ ...first, firstLine: 'exec 3>&-' }),
    ')',
    `case $? in 0) ;; *) ${builtin}exit $? ;; esac`,
    `${builtin}printf '%s' ${text}`,
    `${builtin}printf 'began\n' >&3`,
    `${builtin}exec ${options.shell} ${shellQuote(secondPath)} 3>&-`,
    '',
  ].join('\n');
}

/**
 * Writes a stage's script into its private dir (mode 0600, a name of its own) and returns the path.
 * A file rather than stdin: a job command that reads stdin would otherwise eat the rest of the script.
 */
export async function writeStageScript(shell: ShellName, request: Omit<StageRequest, 'output' | 'signal'>, firstLine?: string): Promise<string> {
  return writeScriptFile(request, generateScript(scriptOptions(shell, request, firstLine)));
}

/** Writes the script of `chain` (generateChainScript) beside the second stage's, whose path it is given. */
export async function writeChainScript(shell: ShellName, chain: ChainedStages, secondPath: string, firstLine?: string): Promise<string> {
  const text = generateChainScript({ ...scriptOptions(shell, chain.first, firstLine), secondPath, between: chain.between });
  return writeScriptFile(chain.first, text);
}

function scriptOptions(shell: ShellName, request: Omit<StageRequest, 'output' | 'signal'>, firstLine?: string): ScriptOptions {
  return {
    ...(firstLine ? { firstLine } : {}),
    shell,
    variables: request.variables,
    workDir: request.workDir,
    commands: request.commands,
    echoCommands: request.echoCommands,
    ...(request.debugTrace ? { debugTrace: true } : {}),
    ...(request.scriptSections ? { scriptSections: request.scriptSections } : {}),
  };
}

async function writeScriptFile(request: Pick<StageRequest, 'stage' | 'scriptDir'>, script: string): Promise<string> {
  const path = join(request.scriptDir, `${request.stage}-${randomBytes(4).toString('hex')}.sh`);
  await writeNewFile(path, script, 0o600);
  return path;
}
