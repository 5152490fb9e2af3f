/**
 * `ci-runner verify`: asks the coordinator about every runner in config.toml (v4
 * `POST /runners/verify` with this host's system id, or v1's E3); `--delete` drops those it no
 * longer knows.
 */
import type { ArgumentsCamelCase, Argv, CommandModule } from 'yargs';
import { CommandError, EXIT } from '../support.js';
import { loadConfigWithWarnings } from '../../agent/config-read.js';
import { removeRunners, resolveConfigPath } from '../../agent/config/index.js';
import { addTlsFlags, entryTls, tlsFromFlags } from '../tls-flags.js';
import { loadSystemId } from '../../agent/config/system-id.js';
import type { RunnerConfig } from '../../agent/config/schema.js';
import { connectRunnerApi } from '../../client/connect.js';
import { shortToken } from '../../util/short-token.js';

interface VerifyArgs {
  config?: string;
  name?: string;
  url?: string;
  token?: string;
  delete: boolean;
  'tls-ca-file'?: string;
  'tls-cert-file'?: string;
  'tls-key-file'?: string;
}

export const verifyCommand: CommandModule<object, VerifyArgs> = {
  command: 'verify',
  describe: 'Check that the coordinator still knows the configured runners (and that kubernetes runners may run pods)',
  builder: (y: Argv) =>
    addTlsFlags(y, { note: ' (instead of the runners\' own)', env: false })
      .option('config', { alias: 'c', type: 'string', describe: 'Config file [env: CONFIG_FILE]' })
      .option('name', { alias: 'n', type: 'string', describe: 'Only this runner' })
      // GitLab Runner's, with no environment names on purpose (a stray CI_SERVER_URL must not filter).
      .option('url', { alias: 'u', type: 'string', describe: 'Only the runner with this URL and --token' })
      .option('token', { alias: 't', type: 'string', describe: 'Only the runner with this token and --url' })
      .option('delete', { type: 'boolean', default: false, describe: 'Remove runners the coordinator no longer knows from config.toml' })
      .epilogue('Exit codes: 0 every runner is alive (or removed with --delete); 2 bad config or an unusable TLS file; 3 a runner is unknown to its coordinator, a coordinator could not be reached, or a kubernetes runner\'s cluster could not be reached or refuses a permission the executor needs.') as unknown as Argv<VerifyArgs>,
  handler: async (argv: ArgumentsCamelCase<VerifyArgs>) => {
    const configPath = resolveConfigPath(argv.config);
    const { config } = await loadConfigWithWarnings(configPath, { checkTlsFiles: false, permissions: 'warn' });
    // As GitLab Runner: a runner is selected by its name, or by its URL and token together.
    const selecting = argv.name !== undefined || argv.url !== undefined || argv.token !== undefined;
    const runners = config.runners.filter((r) => !selecting || r.name === argv.name || (r.url === (argv.url ?? '') && r.token === (argv.token ?? '')));
    if (selecting && runners.length === 0) throw new CommandError(EXIT.usage, `no runner in ${configPath} matches the filtering parameters (--name, or --url with --token)`);
    const flags = tlsFromFlags(argv, {});
    // Every file is checked before the first runner is asked about.
    const tls = runners.map((runner) => entryTls(runner, flags));
    const removed = new Set<string>();
    let problems = 0;
    const systemId = runners.length > 0 ? (await loadSystemId(configPath)).id : '';
    for (const [i, runner] of runners.entries()) {
      const label = `runner "${runner.name}" (${shortToken(runner.token)}...) at ${runner.url}`;
      const client = await connectRunnerApi({ url: runner.url, api: runner.api, tls: tls[i] ?? {}, systemId }).catch((error: unknown) => error as Error);
      if (client instanceof Error) {
        problems += 1;
        process.stdout.write(`Could not verify ${label}: ${client.message}\n`);
        if (runner.executor === 'kubernetes') problems += await verifyKubernetes(runner);
        continue;
      }
      try {
        const result = await client.verifyRunner(runner.token);
        if (result.alive === true) process.stdout.write(`Verified ${label}: is alive\n`);
        else if (result.alive === false) {
          process.stdout.write(`Verified ${label}: is removed (the coordinator does not know its token)\n`);
          removed.add(runner.token);
        } else {
          problems += 1;
          process.stdout.write(`Could not verify ${label}: ${result.error?.message ?? `status ${result.status}`}\n`);
        }
      } finally {
        await client.close();
      }
      if (runner.executor === 'kubernetes') problems += await verifyKubernetes(runner);
    }
    if (argv.delete && removed.size > 0) {
      const names = await removeRunners(configPath, (r) => removed.has(r.token));
      process.stdout.write(`Removed ${names.map((n) => `"${n}"`).join(', ')} from ${configPath}\n`);
    } else problems += removed.size;
    if (problems > 0) process.exitCode = EXIT.coordinator;
  },
};

/** A kubernetes entry's cluster and permissions (SelfSubjectAccessReview); 1 when something is wrong. */
async function verifyKubernetes(runner: RunnerConfig): Promise<number> {
  const { checkAccess, describeAccess } = await import('../../executors/kubernetes/access.js');
  const label = `runner "${runner.name}"`;
  try {
    const report = await checkAccess(runner.kubernetes, AbortSignal.timeout(30_000));
    process.stdout.write(`${report.missing.length === 0 ? 'Verified' : 'Could not verify'} ${label}: ${describeAccess(report, runner.kubernetes.namespace)}\n`);
    return report.missing.length === 0 ? 0 : 1;
  } catch (error) {
    process.stdout.write(`Could not verify ${label}: ${(error as Error).message}\n`);
    return 1;
  }
}
