/** `ci-runner list`: the runners in config.toml. */
import type { ArgumentsCamelCase, Argv, CommandModule } from 'yargs';
import { loadConfigWithWarnings } from '../../agent/config-read.js';
import { resolveConfigPath } from '../../agent/config/index.js';
import { shortToken } from '../../util/short-token.js';

interface ListArgs {
  config?: string;
}

export const listCommand: CommandModule<object, ListArgs> = {
  command: 'list',
  describe: 'List the runners in config.toml',
  builder: (y: Argv) =>
    y.option('config', { alias: 'c', type: 'string', describe: 'Config file [env: CONFIG_FILE]' }).epilogue('Exit codes: 0 listed; 2 the config is missing or invalid.') as unknown as Argv<ListArgs>,
  handler: async (argv: ArgumentsCamelCase<ListArgs>) => {
    const configPath = resolveConfigPath(argv.config);
    const { config } = await loadConfigWithWarnings(configPath, { checkTlsFiles: false, permissions: 'warn' });
    process.stdout.write(`Listing configured runners  ConfigFile=${configPath}\n`);
    for (const r of config.runners) {
      process.stdout.write(`${r.name.padEnd(24)} Executor=${r.executor} Token=${shortToken(r.token)}... URL=${r.url}\n`);
    }
  },
};
