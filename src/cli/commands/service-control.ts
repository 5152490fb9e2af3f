/** `ci-runner start|stop|restart|status`: the installed service, through systemctl. */
import type { ArgumentsCamelCase, Argv, CommandModule } from 'yargs';
import { describeState, parseShow, requireSystemd, systemctl } from '../../service/systemd.js';
import { SERVICE_EXIT_NOTE, serviceOf, withServiceOption, type ServiceArgs } from './service-options.js';

function controlCommand(verb: 'start' | 'stop' | 'restart', describe: string): CommandModule<object, ServiceArgs> {
  return {
    command: verb,
    describe,
    builder: (y: Argv) => withServiceOption(y).epilogue(`Exit codes: 0 done; 1 systemctl failed (its message is printed); 2 bad usage.\n${SERVICE_EXIT_NOTE}`) as unknown as Argv<ServiceArgs>,
    handler: async (argv: ArgumentsCamelCase<ServiceArgs>) => {
      const service = serviceOf(argv);
      await requireSystemd();
      await systemctl([verb, `${service}.service`]);
      process.stdout.write(`${service}: ${verb === 'stop' ? 'stopped' : verb === 'start' ? 'started' : 'restarted'}\n`);
    },
  };
}

export const startCommand = controlCommand('start', 'Start the installed service (systemctl start)');
export const stopCommand = controlCommand('stop', 'Stop the service (systemctl stop: SIGTERM, so running jobs are aborted and reported failed, as with GitLab Runner; for a graceful stop send SIGQUIT: systemctl kill -s SIGQUIT SERVICE)');
export const restartCommand = controlCommand('restart', 'Restart the service (systemctl restart)');

export const statusCommand: CommandModule<object, ServiceArgs> = {
  command: 'status',
  describe: 'Say whether the service is running',
  builder: (y: Argv) =>
    withServiceOption(y).epilogue(`Exit codes (after LSB's status codes): 0 running; 3 installed but not running (stopped, failed, restarting); 4 not installed.\n${SERVICE_EXIT_NOTE}`) as unknown as Argv<ServiceArgs>,
  handler: async (argv: ArgumentsCamelCase<ServiceArgs>) => {
    const service = serviceOf(argv);
    await requireSystemd();
    const state = parseShow(await systemctl(['show', '--property=LoadState,ActiveState,SubState,MainPID', `${service}.service`]));
    const { exitCode, line } = describeState(service, state);
    process.stdout.write(`${line}\n`);
    process.exitCode = exitCode;
  },
};
