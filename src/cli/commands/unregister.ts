/**
 * `ci-runner unregister`: deletes one runner (by name, or url+token) or all on the coordinator, and
 * drops it from config.toml. A runner created in GitLab (`glrt-` token, v4) is not deleted: only this
 * host's manager of it is (`DELETE /runners/managers`), as GitLab Runner does; delete the runner
 * itself in GitLab.
 */
import type { ArgumentsCamelCase, Argv, CommandModule } from 'yargs';
import { CommandError, EXIT } from '../support.js';
import { loadConfigWithWarnings } from '../../agent/config-read.js';
import { removeRunners, resolveConfigPath } from '../../agent/config/index.js';
import { addTlsFlags, entryTls, tlsFromFlags } from '../tls-flags.js';
import { loadSystemId } from '../../agent/config/system-id.js';
import { connectRunnerApi, type ApiChoice } from '../../client/connect.js';
import type { ApiResult } from '../../client/api-call.js';
import { RunnerApiV4Client } from '../../client/v4/client.js';
import { shortToken } from '../../util/short-token.js';

interface UnregisterArgs {
  config?: string;
  name?: string;
  url?: string;
  token?: string;
  'all-runners': boolean;
  'tls-ca-file'?: string;
  'tls-cert-file'?: string;
  'tls-key-file'?: string;
}

export const unregisterCommand: CommandModule<object, UnregisterArgs> = {
  command: 'unregister',
  describe: 'Delete a runner on its coordinator and remove it from config.toml',
  builder: (y: Argv) =>
    addTlsFlags(y, { note: ' (instead of the runner\'s own)', env: ', with --url' })
      .option('config', { alias: 'c', type: 'string', describe: 'Config file [env: CONFIG_FILE]' })
      .option('name', { alias: 'n', type: 'string', describe: 'Runner name in config.toml' })
      .option('url', { alias: 'u', type: 'string', describe: 'Coordinator URL (with --token)' })
      .option('token', { alias: 't', type: 'string', describe: 'Runner token (with --url)' })
      .option('all-runners', { type: 'boolean', default: false, describe: 'Unregister every runner in config.toml' })
      .check((a) => {
        const ways = [a.name !== undefined, a.url !== undefined || a.token !== undefined, a['all-runners'] === true].filter(Boolean).length;
        if (ways !== 1) throw new Error('name exactly one of --name, --url with --token, or --all-runners');
        if ((a.url === undefined) !== (a.token === undefined)) throw new Error('--url and --token go together');
        return true;
      })
      .epilogue('Exit codes: 0 done; 2 no such runner, bad config or an unusable TLS file; 3 the coordinator could not be reached or refused (the entry is kept).') as unknown as Argv<UnregisterArgs>,
  handler: async (argv: ArgumentsCamelCase<UnregisterArgs>) => {
    const configPath = resolveConfigPath(argv.config);
    const { config } = await loadConfigWithWarnings(configPath, { allowMissing: argv.url !== undefined, checkTlsFiles: false });
    const targets = argv['all-runners']
      ? [...config.runners]
      : argv.name !== undefined
        ? config.runners.filter((r) => r.name === argv.name)
        : [{ name: argv.url ?? '', url: argv.url ?? '', token: argv.token ?? '', api: 'auto' as ApiChoice }];
    if (targets.length === 0) throw new CommandError(EXIT.usage, argv.name !== undefined ? `no runner named "${argv.name}" in ${configPath}` : `no runners in ${configPath}`);
    // The environment names count only for --url/--token: an entry's own files are not replaced by them.
    const flags = tlsFromFlags(argv, argv.url !== undefined ? process.env : {});
    // Every file is checked before the first runner is deleted.
    const tls = targets.map((target) => entryTls(target, flags));
    const gone = new Set<string>();
    let failed = 0;
    // Only a runner created in GitLab needs this host's id (its manager is what is removed).
    const systemId = targets.some((target) => target.token.startsWith('glrt-')) ? (await loadSystemId(configPath)).id : '';
    for (const [i, target] of targets.entries()) {
      const client = await connectRunnerApi({ url: target.url, api: target.api, tls: tls[i] ?? {}, ...(systemId ? { systemId } : {}) }).catch((error: unknown) => error as Error);
      if (client instanceof Error) {
        failed += 1;
        process.stderr.write(`Could not unregister runner "${target.name}": ${client.message}; keeping it in the config\n`);
        continue;
      }
      try {
        const created = client instanceof RunnerApiV4Client && target.token.startsWith('glrt-');
        const result: ApiResult = created && client instanceof RunnerApiV4Client ? await client.deleteManager(target.token, systemId) : await client.deleteRunner(target.token);
        if (result.outcome === 'ok') {
          const what = created ? `this host's manager (system id ${systemId}) of runner "${target.name}"; the runner stays in GitLab` : `runner "${target.name}"`;
          process.stdout.write(`Unregistered ${what} (${shortToken(target.token)}...)\n`);
          gone.add(target.token);
        } else if (created && result.status === 404) {
          process.stdout.write(`This host was not a manager of runner "${target.name}" (${shortToken(target.token)}...) on the coordinator; removing it\n`);
          gone.add(target.token);
        } else if (result.status === 403) {
          process.stdout.write(`Runner "${target.name}" (${shortToken(target.token)}...) was already unknown to the coordinator; removing it\n`);
          gone.add(target.token);
        } else {
          failed += 1;
          process.stderr.write(`Could not unregister runner "${target.name}": ${result.error?.message ?? `status ${result.status}`}; keeping it in the config\n`);
        }
      } finally {
        await client.close();
      }
    }
    if (gone.size > 0) await removeRunners(configPath, (r) => gone.has(r.token)).catch((error: unknown) => {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    });
    if (failed > 0) process.exitCode = EXIT.coordinator;
  },
};
