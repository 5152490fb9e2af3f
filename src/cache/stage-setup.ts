/**
 * What both cache stages do first, as GitLab Runner's cache-extractor and cache-archiver scripts do:
 * skip an entry with nothing to cache or no key left, skip it by its policy (with GitLab Runner's
 * line), read the job's cache settings, and open the runner's store (a store that cannot be made is
 * one warning, and the stage goes on with the local copy alone).
 */
import { hasCachePaths, type CacheContext, type CacheStageOptions } from './job.js';
import { cacheSettings, planCache, type CachePlan, type CacheSettings } from './plan.js';
import { openRemote, type RemoteCache } from './remote.js';

export interface StageSetup {
  plan: CachePlan;
  settings: CacheSettings;
  remote: RemoteCache | undefined;
}

const STAGES = {
  restore: {
    doing: 'extraction',
    skippedBy: 'push',
    skipped: (key: string) => `Not downloading cache ${key} due to policy`,
    noStore: (key: string, why: string) => `WARNING: Failed to obtain the distributed cache for ${key}: ${why}`,
  },
  save: {
    doing: 'archiving',
    skippedBy: 'pull',
    skipped: (key: string) => `Not uploading cache ${key} due to policy`,
    noStore: (_key: string, why: string) => `WARNING: Unable to generate cache upload environment: ${why}`,
  },
} as const;

/** The entry's plan, settings and store, or undefined when the stage has nothing to do for it. Throws only the abort reason and CACHE_POLICY_UNKNOWN. */
export async function setUpStage(ctx: CacheContext, opts: CacheStageOptions, stage: keyof typeof STAGES): Promise<StageSetup | undefined> {
  const words = STAGES[stage];
  if (!hasCachePaths(opts.spec)) return undefined;
  const plan = planCache(ctx.build, opts.spec, opts.variable, ctx.log, words.doing);
  if (!plan) return undefined;
  if (plan.policy === words.skippedBy) {
    ctx.log(words.skipped(plan.key));
    return undefined;
  }
  const settings = cacheSettings(opts.variable, ctx.log);
  let remote: RemoteCache | undefined;
  try {
    remote = await openRemote(ctx, opts, settings);
  } catch (error) {
    if (ctx.signal.aborted) throw ctx.signal.reason;
    ctx.log(words.noStore(plan.key, (error as Error).message));
  }
  return { plan, settings, remote };
}
