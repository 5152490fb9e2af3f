/** A real `ci-runner run` process for end-to-end tests, with its output and status server. */
import { execa } from 'execa';
import { NODE_CLI } from './cli.js';
import { waitUntil } from './helpers.js';

export interface Daemon {
  child: ReturnType<typeof execa>;
  output(): string;
  /** The status server's URL from the latest "metrics and health on" line (waits for it). */
  statusUrl(after?: number): Promise<string>;
  /** Stops it with SIGTERM and returns the exit code. */
  stop(): Promise<number | undefined>;
}

export function startDaemon(config: string, args: string[] = []): Daemon {
  const child = execa('node', [...NODE_CLI, 'run', '-c', config, ...args], { reject: false, all: true, stdin: 'ignore' });
  let output = '';
  child.all?.on('data', (c: Buffer) => (output += c.toString()));
  const urls = (): string[] => [...output.matchAll(/metrics and health on (http:\/\/[^\s"]+) \(/g)].map((m) => m[1]!);
  return {
    child,
    output: () => output,
    async statusUrl(after = 0) {
      await waitUntil(() => urls().length > after, 30_000, 'status server listening');
      return urls().at(-1)!;
    },
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      return (await child).exitCode;
    },
  };
}

/** GET `url`: status and body text. */
export async function get(url: string): Promise<{ status: number; text: string; json<T = unknown>(): T }> {
  const response = await fetch(url);
  const text = await response.text();
  return { status: response.status, text, json: <T>() => JSON.parse(text) as T };
}

/** The value of one series in a Prometheus text scrape (0 when absent); `labels` must all match. */
export function metricValue(text: string, name: string, labels: Record<string, string> = {}): number {
  let total = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const have = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) total += Number(match[3]);
  }
  return total;
}
