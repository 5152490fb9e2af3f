/** `ci-runner demo` (what `npm start` runs): the example pipeline on an in-process reference server. */
import type { ArgumentsCamelCase, Argv, CommandModule } from 'yargs';
import { EXIT } from '../../agent/cli-support.js';

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
      .epilogue('Exit codes: 0 the pipeline passed; 1 it failed; 130 interrupted.') as unknown as Argv<DemoArgs>,
  handler: async (argv: ArgumentsCamelCase<DemoArgs>) => {
    const controller = new AbortController();
    const onSignal = (): void => controller.abort(new Error('interrupted'));
    // A closed pipe (`npm start | head`) ends the demo quietly instead of crashing it.
    const onOutputError = (error: NodeJS.ErrnoException): void => {
      if (error.code === 'EPIPE') controller.abort(new Error('output closed'));
    };
    process.stdout.on('error', onOutputError);
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    try {
      const { runDemo } = await import('../../agent/demo.js');
      const result = await runDemo({
        out: process.stdout,
        color: argv.color ?? process.stdout.isTTY === true,
        concurrent: Math.max(1, argv.concurrent),
        signal: controller.signal,
      });
      process.exitCode = result.pipelineStatus === 'success' ? EXIT.ok : EXIT.jobFailed;
    } catch (error) {
      if (controller.signal.aborted) {
        process.stderr.write('demo interrupted\n');
        process.exitCode = 130;
        return;
      }
      throw error;
    } finally {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      process.stdout.off('error', onOutputError);
    }
  },
};
