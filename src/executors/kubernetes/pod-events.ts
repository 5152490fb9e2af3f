/**
 * FF_PRINT_POD_EVENTS: the job pod's events in the job log while it starts, as GitLab Runner 19 prints
 * them: `Subscribing to Kubernetes Pod events...`, then a `Type Reason Message` table whose columns Go's
 * tabwriter aligns at each flush (the heading with the first event, then each event on its own). The
 * events come from a watch of the pod's events (`involvedObject.name`); one that cannot start or breaks
 * costs the table, never the job. At most {@link MAX_EVENTS} events are shown, each on one line.
 */
import type { CoreV1Event } from '@kubernetes/client-node';
import type { KubeApi } from './api.js';
import { watchWhile } from './watch.js';

const MAX_EVENTS = 200;
const MAX_MESSAGE = 1000;
/** Go's tabwriter as GitLab Runner sets it up: minwidth 3, padding 3, blanks. */
const MIN_WIDTH = 3;
const PADDING = 3;

/** Rows of cells as one tabwriter flush prints them: each column but the last padded to its widest cell. */
export function alignRows(rows: readonly string[][]): string[] {
  const widths: number[] = [];
  for (const row of rows) row.slice(0, -1).forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, Math.max(cell.length + PADDING, MIN_WIDTH))));
  return rows.map((row) => row.map((cell, i) => (i < row.length - 1 ? cell.padEnd(widths[i] ?? 0) : cell)).join(''));
}

/** One event as a row of the table: its type, reason and message (on one line, bounded). */
function eventRow(event: CoreV1Event): string[] {
  const message = (event.message ?? '').replace(/[\r\n]+/g, ' ').slice(0, MAX_MESSAGE);
  return [event.type ?? '', event.reason ?? '', message];
}

/** Watches the pod's events until `signal` aborts, each written through `out.log` as GitLab Runner words them. */
export async function printPodEvents(api: KubeApi, pod: { namespace: string; name: string }, out: { log(line: string): void; warn(line: string): void }, signal: AbortSignal): Promise<void> {
  const log = (line: string): void => out.log(line);
  log('Subscribing to Kubernetes Pod events...');
  let shown = 0;
  let heading = true;
  try {
    await watchWhile(api, `/api/v1/namespaces/${pod.namespace}/events`, { fieldSelector: `involvedObject.name=${pod.name}` }, (_type, event: CoreV1Event) => {
      if (signal.aborted || shown > MAX_EVENTS) return;
      shown += 1;
      if (shown > MAX_EVENTS) return log(`(more events of pod ${pod.namespace}/${pod.name} not shown)`);
      const rows = heading ? [['Type', 'Reason', 'Message'], eventRow(event)] : [eventRow(event)];
      heading = false;
      for (const line of alignRows(rows)) log(line);
    }, signal);
  } catch (error) {
    if (!signal.aborted) out.warn(`WARNING: the pod's events could not be watched (FF_PRINT_POD_EVENTS): ${(error as Error).message}`);
  }
}
