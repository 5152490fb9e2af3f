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

interface ResetTokenArgs {
  config?: string;
  name?: string;
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
      .option('all-runners', { type: 'boolean', default: false, describe: 'Reset the token of every runner in config.toml' })
      .check((a) => {
        if ((a.name !== undefined) === (a['all-runners'] === true)) throw new Error('name exactly one of --name or --all-runners');
        return true;
      })
      .epilogue('The old token stops working at once; a running `ci-runner run` reads the new one from the file.\nExit codes: 0 done; 2 no such runner, bad config or an unusable TLS file; 3 the coordinator could not be reached, refused, or speaks only v1 (the entry is unchanged).') as unknown as Argv<ResetTokenArgs>,
  handler: async (argv: ArgumentsCamelCase<ResetTokenArgs>) => {
    const configPath = resolveConfigPath(argv.config);
    const { config } = await loadConfigWithWarnings(configPath, { checkTlsFiles: false });
    const targets = argv['all-runners'] ? [...config.runners] : config.runners.filter((r) => r.name === argv.name);
    if (targets.length === 0) throw new CommandError(EXIT.usage, argv.name !== undefined ? `no runner named "${argv.name}" in ${configPath}` : `no runners in ${configPath}`);
    const flags = tlsFromFlags(argv, {});
    const tls = targets.map((target) => entryTls(target, flags));
    let failed = 0;
    for (const [i, target] of targets.entries()) {
      const label = `runner "${target.name}" (${target.token.slice(0, 8)}...)`;
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
        const result = await client.resetToken(target.token);
        if (!result.token) {
          failed += 1;
          const why = result.status === 403 ? 'the coordinator does not know its token (403)' : (result.error?.message ?? `status ${result.status}`);
          process.stderr.write(`Could not reset the token of ${label}: ${why}\n`);
          continue;
        }
        const written = await updateRunner(configPath, target.token, {
          token: result.token,
          token_obtained_at: new Date(),
          ...(result.tokenExpiresAt ? { token_expires_at: new Date(result.tokenExpiresAt) } : {}),
        }).catch((error: unknown) => error as Error);
        if (written !== true) {
          // The old token is dead already: the new one must not be lost.
          const why = written instanceof Error ? written.message : 'the entry is no longer in the file';
          throw new CommandError(EXIT.usage, `the coordinator gave ${label} a new token, but ${configPath} cannot be updated (${why}): set token = "${result.token}" in its entry yourself`);
        }
        process.stdout.write(`Reset the token of ${label}: now ${result.token.slice(0, 8)}..., written to ${configPath}\n`);
      } finally {
        await client.close();
      }
    }
    if (failed > 0) process.exitCode = EXIT.coordinator;
  },
};
