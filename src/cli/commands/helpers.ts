/**
 * GitLab Runner's helper commands, which the custom executor's stage scripts call where the job runs
 * (`gitlab-runner artifacts-downloader …`): ci-runner answers to them with GitLab Runner's flags and
 * environment names (cli/helpers/flags.ts), so a machine image with ci-runner installed as
 * `gitlab-runner` serves, as one with GitLab Runner's binary does. Exit 1 with `FATAL: …` on failure.
 */
import type { ArgumentsCamelCase, Argv, CommandModule } from 'yargs';
import { addEnvOptions, checkFlagSupport, resolveEnvOptions, type EnvFlag } from '../env-options.js';
import { ARTIFACTS_DOWNLOADER_FLAGS, ARTIFACTS_UPLOADER_FLAGS, CACHE_ARCHIVER_FLAGS, CACHE_EXTRACTOR_FLAGS } from '../helpers/flags.js';

type Values = Record<string, unknown>;

function helper(name: string, describe: string, flags: readonly EnvFlag[], run: (values: Values) => Promise<void>): CommandModule<object, Values> {
  return {
    command: name,
    describe,
    builder: (y: Argv) => addEnvOptions(y, flags).epilogue('Exit codes: 0 done; 1 failed (FATAL: the reason); 2 a flag that cannot be used.') as unknown as Argv<Values>,
    handler: async (argv: ArgumentsCamelCase<Values>) => {
      for (const line of checkFlagSupport(argv, flags)) process.stderr.write(`WARNING: ${line}\n`);
      try {
        await run(resolveEnvOptions(argv, flags));
      } catch (error) {
        // GitLab Runner's helpers end with logrus' FATAL line and exit 1.
        process.stderr.write(`\x1b[31;1mFATAL: ${(error as Error).message}\x1b[0;m\n`);
        process.exitCode = typeof (error as { exitCode?: unknown }).exitCode === 'number' ? (error as { exitCode: number }).exitCode : 1;
      }
    },
  };
}

export const artifactsDownloaderCommand = helper('artifacts-downloader', 'download and extract build artifacts (internal)', ARTIFACTS_DOWNLOADER_FLAGS, async (values) => (await import('../helpers/artifacts.js')).artifactsDownloader(values));
export const artifactsUploaderCommand = helper('artifacts-uploader', 'create and upload build artifacts (internal)', ARTIFACTS_UPLOADER_FLAGS, async (values) => (await import('../helpers/artifacts.js')).artifactsUploader(values));
export const cacheExtractorCommand = helper('cache-extractor', 'download and extract cache artifacts (internal)', CACHE_EXTRACTOR_FLAGS, async (values) => (await import('../helpers/cache.js')).cacheExtractor(values));
export const cacheArchiverCommand = helper('cache-archiver', 'create and upload cache artifacts (internal)', CACHE_ARCHIVER_FLAGS, async (values) => (await import('../helpers/cache.js')).cacheArchiver(values));
