/**
 * The touch points between the daemon and its observer, as wrappers around what the daemon already
 * passes along: the runner API client (every coordinator call, trace and artifact bytes) and the job
 * services (stage changes, artifact and cache stages). The code they wrap knows nothing of metrics.
 */
import { stat } from 'node:fs/promises';
import type { RunnerApi } from '../../client/api.js';
import type { RunnerConfig } from '../config/schema.js';
import type { SharedServices } from '../services.js';
import type { CacheRequest, StageContext } from '../job/artifact-stages.js';
import { runnerLabel, type ObserverSlot } from './observer.js';

type Method = (...args: never[]) => Promise<{ status: number }>;

/** `client` as seen by one runner entry: each call is timed and counted under the entry's name. */
export function observedClient(client: RunnerApi, runner: () => Pick<RunnerConfig, 'name'>, slot: ObserverSlot): RunnerApi {
  return new Proxy(client, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function' || property === 'close' || typeof property !== 'string') return value;
      return async (...args: unknown[]) => {
        const observer = slot.current;
        const method = value as Method;
        if (!observer) return method.apply(target, args as never[]);
        const startedAt = process.hrtime.bigint();
        const result = await method.apply(target, args as never[]);
        const name = runnerLabel(runner());
        observer.request(name, property, result.status, Number(process.hrtime.bigint() - startedAt) / 1e9);
        await afterCall(observer, name, property, args, result);
        return result;
      };
    },
  });
}

async function afterCall(observer: NonNullable<ObserverSlot['current']>, name: string, endpoint: string, args: unknown[], result: { status: number; kind?: string; size?: number; serverLength?: number }): Promise<void> {
  if (result.status === -1) observer.error('transport');
  else if (result.status >= 500) observer.error('coordinator_5xx');
  if (endpoint === 'requestBuild') {
    if (result.kind === 'forbidden') observer.error('runner_forbidden');
    if (result.kind === 'invalid-build') observer.error('invalid_build');
  } else if (endpoint === 'patchTrace') {
    const [id, , start, bytes] = args as [number, string, number, Uint8Array];
    if (result.status === 202) observer.traceSent(name, id, bytes.byteLength, start + bytes.byteLength);
    else if (result.status === 416) {
      observer.traceResync(name);
      if (result.serverLength !== undefined) observer.traceSent(name, id, 0, result.serverLength);
    }
  } else if (endpoint === 'uploadArtifacts' && result.status >= 200 && result.status < 300) {
    const file = args[2] as { path: string };
    const size = await stat(file.path).then((s) => s.size, () => 0);
    observer.artifactBytes(name, 'up', size);
  } else if (endpoint === 'downloadArtifacts' && result.status === 200 && result.size !== undefined) {
    observer.artifactBytes(name, 'down', result.size);
  }
}

/** The job services with stage changes and cache traffic reported to the slot's observer. */
export function observedServices(services: SharedServices, slot: ObserverSlot): SharedServices {
  const stages = services.stages;
  // The job's stage comes from the stage sequence (onStage), by the stage table's names.
  return {
    ...services,
    onStage: (build, stage) => {
      slot.current?.jobStage(build, stage);
      services.onStage?.(build, stage);
    },
    stages: {
      downloadArtifacts: (ctx, opts) => stages.downloadArtifacts(ctx, opts),
      uploadArtifacts: (ctx, opts) => stages.uploadArtifacts(ctx, opts),
      restoreCache: async (ctx, opts) => {
        const before = await cacheFile(slot, ctx, opts);
        await stages.restoreCache(ctx, opts);
        if (before) slot.current?.cacheBytes(opts.runnerName, 'down', before.size);
      },
      archiveCache: async (ctx, opts) => {
        const before = await cacheFile(slot, ctx, opts);
        await stages.archiveCache(ctx, opts);
        const after = await cacheFile(slot, ctx, opts);
        // The archive is renamed into place whole: a new inode or mtime means it was written.
        if (after && (!before || after.ino !== before.ino || after.mtimeMs !== before.mtimeMs)) slot.current?.cacheBytes(opts.runnerName, 'up', after.size);
      },
    },
  };
}

/** The cache archive's size and identity, when an observer wants it and the file exists. */
async function cacheFile(slot: ObserverSlot, ctx: StageContext, opts: CacheRequest): Promise<{ size: number; ino: number; mtimeMs: number } | undefined> {
  if (!slot.current || !ctx.build.options.cache) return undefined;
  try {
    const { cacheFilePath } = await import('../../artifacts/naming.js');
    const stats = await stat(cacheFilePath(opts.cacheDir, opts.runnerName, ctx.build, opts.key));
    return stats.isFile() ? stats : undefined;
  } catch {
    return undefined;
  }
}
