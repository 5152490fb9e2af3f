/**
 * `ci-runner reset-token`: a new token for one runner (by name) or all, from the coordinator
 * (v4 `POST /runners/reset_authentication_token`), written over the old one in config.toml with
 * when it was obtained (and when it expires, if it does). The old token stops working at once, so
 * the new one is written before anything else; a running daemon picks it up from the file. The v1
 * API has no token reset: such a runner is left alone with a message.
 */
import type { ArgumentsCamelCase, Argv, CommandModule } from 'yargs';
import { loadConfigWithWarnings } from '../../agent/config-read.js';
import { CommandError, EXIT } from '../support.js';
import { resolveConfigPath, updateRunner } from '../../agent/config/index.js';
import { addTlsFlags, entryTls, tlsFromFlags } from '../tls-flags.js';
import { connectRunnerApi } from '../../client/connect.js';
import { RunnerApiV4Client } from '../../client/v4/client.js';
import { tokenTimes } from './register-flow.js';
import { shortToken } from '../../util/short-token.js';

interface ResetTokenArgs {
  config?: string;
  name?: string;
  url?: string;
  id?: number;
  pat?: string;
  'all-runners': boolean;
  'tls-ca-file'?: string;
  'tls-cert-file'?: string;
  'tls-key-file'?: string;
}

export const resetTokenCommand: CommandModule<object, ResetTokenArgs> = {
  command: 'reset-token',
  describe: 'Give a runner a new token from the coordinator (v4) and write it to config.toml',
  builder: (y: Argv) =>
    addTlsFlags(y, { note: ' (instead of the runner\'s own)', env: false })
      .option('config', { alias: 'c', type: 'string', describe: 'Config file [env: CONFIG_FILE]' })
      .option('name', { alias: 'n', type: 'string', describe: 'Runner name in config.toml' })
      .option('url', { alias: 'u', type: 'string', describe: 'With --id: the runner of this URL and id in config.toml' })
      .option('id', { alias: 'i', type: 'number', describe: 'With --url: the runner of this id (as register wrote it) in config.toml' })
      .option('pat', { type: 'string', describe: "A personal access token that may manage the runner, used instead of the runner's own token (POST /runners/:id/reset_authentication_token; the entry needs its id)" })
      .option('all-runners', { type: 'boolean', default: false, describe: 'Reset the token of every runner in config.toml' })
      .check((a) => {
        const byUrlId = a.url !== undefined || a.id !== undefined;
        if ([a.name !== undefined, byUrlId, a['all-runners'] === true].filter(Boolean).length !== 1) throw new Error('name the runner with exactly one of --name, --url with --id, or --all-runners');
        if (byUrlId && (a.url === undefined || a.id === undefined)) throw new Error('--url and --id go together');
        return true;
      })
      .epilogue('The old token stops working at once; a running `ci-runner run` reads the new one from the file.\nExit codes: 0 done; 2 no such runner, bad config or an unusable TLS file; 3 the coordinator could not be reached, refused, or speaks only v1 (the entry is unchanged).') as unknown as Argv<ResetTokenArgs>,
  handler: async (argv: ArgumentsCamelCase<ResetTokenArgs>) => {
    const configPath = resolveConfigPath(argv.config);
    const { config } = await loadConfigWithWarnings(configPath, { checkTlsFiles: false });
    const targets = argv['all-runners'] ? [...config.runners] : config.runners.filter((r) => (argv.name !== undefined ? r.name === argv.name : r.url === argv.url && r.id === argv.id));
    if (targets.length === 0) {
      const which = argv.name !== undefined ? `named "${argv.name}"` : argv.url !== undefined ? `with url ${argv.url} and id ${argv.id}` : undefined;
      throw new CommandError(EXIT.usage, which ? `no runner ${which} in ${configPath}` : `no runners in ${configPath}`);
    }
    const noId = argv.pat !== undefined ? targets.find((target) => target.id === undefined) : undefined;
    if (noId) throw new CommandError(EXIT.usage, `--pat resets a runner by its id, and runner "${noId.name}" has no id in ${configPath}; use its own token (leave out --pat)`);
    const flags = tlsFromFlags(argv, {});
    const tls = targets.map((target) => entryTls(target, flags));
    let failed = 0;
    for (const [i, target] of targets.entries()) {
      const label = `runner "${target.name}" (${shortToken(target.token)}...)`;
      const client = await connectRunnerApi({ url: target.url, api: target.api, tls: tls[i] ?? {} }).catch((error: unknown) => error as Error);
      if (client instanceof Error) {
        failed += 1;
        process.stderr.write(`Could not reset the token of ${label}: ${client.message}\n`);
        continue;
      }
      try {
        if (!(client instanceof RunnerApiV4Client)) {
          failed += 1;
          process.stderr.write(`Could not reset the token of ${label}: ${target.url} speaks only the v1 runner API, which has no token reset; unregister and register it again for a new token\n`);
          continue;
        }
        const result = argv.pat !== undefined ? await client.resetTokenWithPat(target.id ?? 0, argv.pat) : await client.resetToken(target.token);
        if (!result.token) {
          failed += 1;
          const refusedWhat = argv.pat !== undefined ? 'the personal access token' : 'its token';
          const why = result.status === 403 || result.status === 401 ? `the coordinator refused ${refusedWhat} (${result.status})` : (result.error?.message ?? `status ${result.status}`);
          process.stderr.write(`Could not reset the token of ${label}: ${why}\n`);
          continue;
        }
        const written = await updateRunner(configPath, target.token, { token: result.token, ...tokenTimes(result.tokenExpiresAt) }).catch((error: unknown) => error as Error);
        if (written !== true) {
          // The old token is dead already: the new one must not be lost.
          const why = written instanceof Error ? written.message : 'the entry is no longer in the file';
          throw new CommandError(EXIT.usage, `the coordinator gave ${label} a new token, but ${configPath} cannot be updated (${why}): set token = "${result.token}" in its entry yourself`);
        }
        process.stdout.write(`Reset the token of ${label}: now ${shortToken(result.token)}..., written to ${configPath}\n`);
      } finally {
        await client.close();
      }
    }
    if (failed > 0) process.exitCode = EXIT.coordinator;
  },
};
