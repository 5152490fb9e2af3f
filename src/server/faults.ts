/**
 * Fault injection (`FaultRule` in types.ts; `serve --fault`, the admin API): rules are checked in the
 * order they were added; the first one that matches the endpoint and build, has firings left and
 * passes its percentage fires. The percentage draws from a seeded PRNG so tests are repeatable.
 */
import type { FaultEndpoint, FaultRule } from './types.js';

interface ActiveRule {
  id: number;
  rule: FaultRule;
  fired: number;
}

/** mulberry32: tiny, fast, good enough for test percentages. */
function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

export class FaultRegistry {
  private readonly rules: ActiveRule[] = [];
  private nextId = 1;
  private readonly random: () => number;

  constructor(rules: FaultRule[] = [], seed: number = Date.now()) {
    this.random = seededRandom(seed);
    for (const rule of rules) this.add(rule);
  }

  /** Adds a rule; returns its id for `remove`. */
  add(rule: FaultRule): number {
    const id = this.nextId++;
    this.rules.push({ id, rule: { ...rule }, fired: 0 });
    return id;
  }

  remove(id: number): void {
    const index = this.rules.findIndex((active) => active.id === id);
    if (index >= 0) this.rules.splice(index, 1);
  }

  clear(): void {
    this.rules.length = 0;
  }

  /** The rule that fires for this request, if any (counting the firing). */
  pick(endpoint: Exclude<FaultEndpoint, '*'>, buildId: number | undefined): FaultRule | undefined {
    for (const active of this.rules) {
      const { rule } = active;
      if (rule.endpoint !== '*' && rule.endpoint !== endpoint) continue;
      if (rule.buildId !== undefined && rule.buildId !== buildId) continue;
      if (rule.count !== undefined && active.fired >= rule.count) continue;
      const percent = rule.percent ?? 100;
      if (percent < 100 && this.random() * 100 >= percent) continue;
      active.fired++;
      return rule;
    }
    return undefined;
  }
}

/** Every endpoint a fault rule may name (v4's endpoints share v1's names where they do the same thing). */
export const FAULT_ENDPOINTS: readonly string[] = [
  'register_runner', 'delete_runner', 'request_build', 'update_build', 'patch_trace', 'upload_artifacts', 'download_artifacts', 'delete_artifacts',
  'verify_runner', 'reset_runner_token', 'delete_runner_manager', 'git', '*',
];

/**
 * Parses the CLI form `ENDPOINT:ACTION[:OPTION][:OPTION]` (e.g. `patch_trace:apply_then_error:20%`,
 * `upload_artifacts:error`, `request_build:error:429:50%`, `request_build:delay:250`). An option is a
 * percentage, an HTTP status (400–599) for `error` and `apply_then_error`, or milliseconds for
 * `delay` (1 s unless given).
 */
export function parseFaultFlag(text: string): FaultRule {
  const [endpoint = '', action = '', ...options] = text.split(':');
  const endpoints = FAULT_ENDPOINTS;
  const actions = ['error', 'delay', 'hang', 'apply_then_error', 'close'];
  if (!endpoints.includes(endpoint)) throw new Error(`unknown fault endpoint "${endpoint}" in "${text}"; use one of ${endpoints.join(', ')}`);
  if (!actions.includes(action)) throw new Error(`unknown fault action "${action}" in "${text}"; use one of ${actions.join(', ')}`);
  if (options.length > 2) throw new Error(`too many options in "${text}"; expected ENDPOINT:ACTION[:OPTION][:OPTION]`);
  const rule: FaultRule = { endpoint: endpoint as FaultEndpoint, action: action as FaultRule['action'] };
  if (action === 'delay') rule.delayMs = 1000;
  for (const option of options) {
    const percent = /^(\d+(?:\.\d+)?)%$/.exec(option);
    if (percent) rule.percent = Number(percent[1]);
    else if (action === 'delay' && /^\d+$/.test(option)) rule.delayMs = Number(option);
    else if ((action === 'error' || action === 'apply_then_error') && /^[45]\d\d$/.test(option)) rule.status = Number(option);
    else throw new Error(`bad fault option "${option}" in "${text}"; expected a percentage such as 25%${action === 'error' || action === 'apply_then_error' ? ' or a status such as 429' : ''}`);
  }
  return rule;
}

/**
 * Headers a faulted answer carries: a 429 says when to come back as GitLab does (`Retry-After`, and
 * `RateLimit-ResetTime`, which GitLab Runner waits for), a 503 `Retry-After`.
 */
export function faultHeaders(status: number, now = Date.now()): Record<string, string> {
  if (status === 429) return { 'retry-after': '1', 'ratelimit-resettime': new Date(now + 1000).toUTCString() };
  if (status === 503) return { 'retry-after': '1' };
  return {};
}
