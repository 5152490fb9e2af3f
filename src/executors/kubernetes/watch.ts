/** A watch of one kind of object of the API server, for as long as a signal allows. */
import { Watch } from '@kubernetes/client-node';
import type { KubeApi } from './api.js';

/**
 * Feeds every change the API server reports under `path` (filtered by `query`) to `onChange` until
 * `signal` aborts. Rejects when the watch cannot start; a watch that breaks later just ends.
 */
export async function watchWhile<T>(api: KubeApi, path: string, query: Record<string, string>, onChange: (type: string, object: T) => void, signal: AbortSignal): Promise<void> {
  const watch = new Watch(api.connection.config);
  const controller = await watch.watch(path, query, (type, object: T) => onChange(type, object), () => undefined);
  if (signal.aborted) controller.abort();
  else signal.addEventListener('abort', () => controller.abort(), { once: true });
}
