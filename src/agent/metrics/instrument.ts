/**
 * The touch points between the daemon and its observer, as wrappers around what the daemon already
 * passes along: the runner API client (every coordinator call, trace and artifact bytes) and the job
 * services (stage changes, artifact and cache stages). The code they wrap knows nothing of metrics.
 */
import { stat } from 'node:fs/promises';
import type { RunnerApi } from '../../client/api.js';
import type { RunnerConfig } from '../config/schema.js';
import type { SharedServices } from '../services.js';
import type { ArtifactStages, StageContext } from '../job/artifact-stages.js';
import type { ObserverSlot, RunnerObserver, RunnerRef } from './observer.js';

type Method = (...args: never[]) => Promise<{ status: number }>;

/** `client` as seen by one runner entry: each call is timed and counted under the entry's labels. */
export function observedClient(client: RunnerApi, runner: () => Pick<RunnerConfig, 'name' | 'token'>, slot: ObserverSlot): RunnerApi {
  return new Proxy(client, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function' || property === 'close' || typeof property !== 'string') return value;
      return async (...args: unknown[]) => {
        const observer = slot.current;
        const method = value as Method;
        if (!observer) return method.apply(target, args as never[]);
        const ref = runner();
        const polling = property === 'requestBuild';
        if (polling) observer.jobRequest(ref, 'started');
        const startedAt = process.hrtime.bigint();
        let result: Awaited<ReturnType<Method>> & { kind?: string } = { status: -1 };
        try {
          result = await method.apply(target, args as never[]);
        } finally {
          if (polling) observer.jobRequest(ref, 'ended', result.status >= 200 && result.status < 500 && result.kind !== 'forbidden');
        }
        observer.request(ref, property, result.status, Number(process.hrtime.bigint() - startedAt) / 1e9);
        await afterCall(observer, ref, property, args, result);
        return result;
      };
    },
  });
}

async function afterCall(observer: RunnerObserver, name: RunnerRef, endpoint: string, args: unknown[], result: { status: number; kind?: string; size?: number; serverLength?: number }): Promise<void> {
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
        const restored = await stages.restoreCache(ctx, opts);
        if (restored) slot.current?.cacheBytes(ctx.build, 'down', restored.bytes);
        return restored;
      },
      archiveCache: async (ctx, opts) => {
        const saved = await stages.archiveCache(ctx, opts);
        if (saved) slot.current?.cacheBytes(ctx.build, 'up', saved.bytes);
        return saved;
      },
    },
  };
}
