/** What cache tests share: the options of one cache of a build, with the runner's settings. */
import type { CacheConfig, CacheStageOptions } from '../../src/cache/index.js';
import type { BuildPayload, CacheOptions } from '../../src/protocol/types.js';

/** A runner token whose GitLab Runner 19 short token is `abcdefghi`. */
export const RUNNER_TOKEN = 'glrt-abcdefghijklmnopqrst';

/** The options for the build's (first) cache; `variables` are the job's, `config` the runner's [runners.cache]. */
export function cacheOptions(cacheDir: string, build: BuildPayload, extra: { config?: CacheConfig; variables?: Record<string, string>; spec?: CacheOptions; ca?: string } = {}): CacheStageOptions {
  const cache = build.options.cache;
  const spec = extra.spec ?? (Array.isArray(cache) ? cache[0] : cache) ?? {};
  return {
    cacheDir,
    runnerName: 'r1',
    runnerToken: RUNNER_TOKEN,
    spec,
    variable: (name) => extra.variables?.[name],
    ...(extra.config ? { config: extra.config } : {}),
    ...(extra.ca ? { ca: extra.ca } : {}),
  };
}
