/** `ci-runner demo` (what `npm start` runs): the example pipeline on an in-process reference server. */
import type { ArgumentsCamelCase, Argv, CommandModule } from 'yargs';
import { EXIT } from '../support.js';
import { runInterruptible } from '../interrupt.js';

interface DemoArgs {
  concurrent: number;
  color?: boolean;
}

export const demoCommand: CommandModule<object, DemoArgs> = {
  command: 'demo',
  describe: 'Run the example pipeline on an in-process reference server with live logs (npm start)',
  builder: (y: Argv) =>
    y
      .option('concurrent', { type: 'number', default: 1, describe: 'Jobs at once (logs are prefixed with the job name when > 1)' })
      .option('color', { type: 'boolean', describe: 'Colour output (default: when stdout is a terminal)' })
      .epilogue('Exit codes: 0 the pipeline passed; 1 it failed; 130/143 interrupted (SIGINT/SIGTERM).') as unknown as Argv<DemoArgs>,
  handler: async (argv: ArgumentsCamelCase<DemoArgs>) => {
    // A closed pipe (`npm start | head`) ends the demo quietly instead of crashing it.
    await runInterruptible('demo', async (signal) => {
      const { runDemo } = await import('../demo.js');
      const result = await runDemo({
        out: process.stdout,
        color: argv.color ?? process.stdout.isTTY === true,
        concurrent: Math.max(1, argv.concurrent),
        signal,
      });
      return result.pipelineStatus === 'success' ? EXIT.ok : EXIT.jobFailed;
    });
  },
};
