/** `ci-runner exec [JOB…]`: the project's pipeline, from the working tree as it is, run locally. */
import { availableParallelism } from 'node:os';
import type { ArgumentsCamelCase, Argv, CommandModule } from 'yargs';
import { addDockerFlags, dockerTableFromFlags, flagOfKey } from '../docker-flags.js';
import { CiRunnerError } from '../../util/errors.js';
import { requestedLogLevel } from '../global-options.js';
import { runInterruptible } from '../interrupt.js';

/**
 * Bad usage: exit 2. Not cli-support's CommandError: that module brings the config loader, which exec
 * does not use and would load before its first git command.
 */
class ExecUsageError extends CiRunnerError {
  readonly exitCode = 2;

  constructor(message: string) {
    super('EXEC_USAGE', message);
  }
}

interface ExecArgs {
  jobs: string[];
  executor?: ExecExecutor;
  file?: string;
  cwd: string;
  ref?: string;
  stage: string[];
  needs: boolean;
  manual: string[];
  shell: 'bash' | 'sh';
  variable: string[];
  'env-file': string[];
  concurrent: number;
  list: boolean;
  'artifacts-to'?: string;
  color?: boolean;
  [dockerFlag: `docker-${string}`]: unknown;
}

export const execCommand: CommandModule<object, ExecArgs> = {
  command: 'exec [jobs..]',
  describe: "Run the project's .gitlab-ci.yml locally on the working tree as it is (uncommitted changes included)",
  builder: (y: Argv) =>
    addDockerFlags(
      y
        .positional('jobs', { type: 'string', array: true, default: [], describe: 'Jobs to run (default: the whole pipeline)' })
        .option('file', { alias: 'f', type: 'string', describe: 'Pipeline file (default: .gitlab-ci.yml at the top of the working tree); paths are relative to the current directory' })
        .option('cwd', { type: 'string', default: '.', describe: 'A directory in the git working tree to run' })
        .option('ref', { type: 'string', describe: 'Branch the pipeline runs for (default: the current branch; refs/tags/NAME for a tag)' })
        // nargs 1: `-v A=1 build` takes one value per flag, so `build` stays a job name.
        .option('stage', { type: 'string', array: true, nargs: 1, default: [], describe: 'Run the jobs of this stage (repeatable)' })
        .option('needs', { type: 'boolean', default: false, describe: 'Also run what the named jobs depend on (needs:, else the earlier stages), transitively' })
        .option('manual', { type: 'string', array: true, nargs: 1, default: [], describe: 'Play this manual job when it comes up (repeatable)' })
        .option('executor', { type: 'string', defaultDescription: 'shell', choices: EXECUTORS, describe: 'Executor (docker: jobs in containers, see the --docker-* options)' })
        .option('shell', { type: 'string', default: 'bash', choices: ['bash', 'sh'], describe: 'Shell for job scripts' })
        .option('variable', { alias: 'v', type: 'string', array: true, nargs: 1, default: [], describe: 'Pipeline variable NAME=value (repeatable; wins over --env-file)' })
        .option('env-file', { type: 'string', array: true, nargs: 1, default: [], describe: 'Pipeline variables from a dotenv file (repeatable)' })
        .option('concurrent', { alias: 'c', type: 'number', default: availableParallelism(), defaultDescription: 'the number of CPUs', describe: 'Jobs at once: every job that is ready starts, up to this many (logs are prefixed with the job name when > 1)' })
        .option('list', { type: 'boolean', default: false, describe: 'Print the jobs that would run (stage, when, needs) and exit' })
        .option('artifacts-to', { type: 'string', describe: "Extract each job's artifacts into DIR/<job>/" })
        .option('color', { type: 'boolean', describe: 'Colour output (default: when stdout is a terminal)' }),
    )
      .example('$0 exec', 'Run the whole pipeline')
      .example('$0 exec test --needs', 'Run job test and the jobs it needs')
      .example('$0 exec --stage build -v DEPLOY=0', 'Run the build stage with a variable')
      .example('$0 exec --list', 'Show the jobs that would run')
      .example('$0 exec docker test', "Run job test in docker (GitLab Runner's form: the executor, then the job)")
      .epilogue(
        'Nothing is written to the working tree or the repository: the server gets a snapshot commit made with a temporary index and object store. ' +
          'Logs and artifacts are kept under $XDG_STATE_HOME/ci-runner/exec (default ~/.local/state), the newest 10 runs per project.\n\n' +
          'Exit codes: 0 the pipeline passed; 1 it failed; 2 bad usage, not a git working tree or an invalid pipeline file (every problem listed); 130/143 interrupted.',
      ) as unknown as Argv<ExecArgs>,
  handler: async (argv: ArgumentsCamelCase<ExecArgs>) => {
    if (!Number.isInteger(argv.concurrent) || argv.concurrent < 1) throw new ExecUsageError(`--concurrent: expects a whole number of at least 1, got ${String(argv.concurrent)}`);
    const { executor, jobs, executorWord } = executorAndJobs(argv.jobs.map(String), argv.executor);
    const docker = executor === 'docker' ? dockerTableFromFlags(argv) : {};
    await runInterruptible('exec', async (signal) => {
      const { runExec } = await import('../../exec/run.js');
      if (executor === 'docker') await checkDocker(docker);
      const result = await runExec({
        cwd: argv.cwd,
        ...(argv.file !== undefined ? { file: argv.file } : {}),
        ...(argv.ref !== undefined ? { ref: argv.ref } : {}),
        selection: { jobs, stages: argv.stage, withNeeds: argv.needs, ...(executorWord !== undefined ? { executorWord } : {}) },
        manual: argv.manual,
        runner: { executor, shell: argv.shell, docker },
        variables: argv.variable,
        envFiles: argv['env-file'],
        concurrent: argv.concurrent,
        list: argv.list,
        ...(argv['artifacts-to'] !== undefined ? { artifactsTo: argv['artifacts-to'] } : {}),
        out: process.stdout,
        color: argv.color ?? process.stdout.isTTY === true,
        signal,
        // The global --log-level/--debug; the runner's and server's own log stays quiet otherwise.
        logLevel: execLogLevel(argv),
      });
      return result.exitCode;
    });
  },
};

const EXECUTORS = ['shell', 'docker'] as const;
type ExecExecutor = (typeof EXECUTORS)[number];

/**
 * GitLab Runner's `exec EXECUTOR JOB`: a first word that names an executor, followed by a job, picks the
 * executor (unless the pipeline has a job of that name: `selectJobs` then asks which was meant). One word
 * alone stays a job name, as does anything after `--executor`.
 */
function executorAndJobs(words: string[], flag: ExecExecutor | undefined): { executor: ExecExecutor; jobs: string[]; executorWord?: string } {
  const [first, ...rest] = words;
  const word = EXECUTORS.find((name) => name === first);
  if (flag !== undefined || word === undefined || rest.length === 0) return { executor: flag ?? 'shell', jobs: words };
  return { executor: word, jobs: rest, executorWord: word };
}

/** Refuses at once when docker cannot run jobs, rather than failing every job. */
async function checkDocker(docker: Record<string, unknown>): Promise<void> {
  const [{ checkDocker: check }, { dockerSchema }] = await Promise.all([import('../../agent/executor-check.js'), import('../../agent/config/docker-schema.js')]);
  const parsed = dockerSchema.safeParse(docker);
  if (!parsed.success) throw new ExecUsageError(parsed.error.issues.map((i) => `${flagOfKey(String(i.path[0] ?? ''))}: ${i.message}`).join('\n'));
  const result = await check(parsed.data.cli, parsed.data.host);
  if (!result.ok) throw new ExecUsageError(`cannot run docker jobs: ${result.reason}`);
}

/** The global --log-level/--debug for the runner's and server's own log; quiet when not asked for. */
function execLogLevel(argv: Record<string, unknown>): 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'silent' {
  const level = requestedLogLevel(argv);
  return level === undefined ? 'silent' : level === 'fatal' ? 'error' : level;
}
