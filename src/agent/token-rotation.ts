/**
 * Automatic renewal of runner tokens that expire, as GitLab Runner 19 does it (commands/multi.go
 * `resetRunnerTokens`, network/gitlab.go `ResetToken`): of the entries with a `token_expires_at`, the
 * one due first is renewed when three quarters of its token's life (from `token_obtained_at`) have
 * passed, with `POST /api/v4/runners/reset_authentication_token`. The new token, when it was obtained
 * and when it expires are written into that entry of config.toml in place (every other line of the
 * file kept as it was, replaced atomically), and the daemon carries on with it at once.
 *
 * An entry whose `[runners.feature_flags]` sets FF_DISABLE_AUTOMATIC_TOKEN_ROTATION is not renewed: a
 * warning says its token is about to expire, as GitLab Runner's does (which then stops renewing every
 * entry's token; here the others go on).
 *
 * Unlike GitLab Runner, a failed reset is retried after a growing pause (1 minute up to 30) instead of
 * at once in a loop, and a file that cannot be written keeps the new token in use in memory and is
 * retried at every pass: the old token is dead, so the new one must not be lost.
 */
import { updateRunner } from './config/write.js';
import type { Config, RunnerConfig } from './config/schema.js';
import { runnerTls } from './runner-tls.js';
import { connectRunnerApi } from '../client/connect.js';
import { RunnerApiV4Client } from '../client/v4/client.js';
import type { Logger } from '../log/index.js';
import { shortToken } from '../util/short-token.js';
import { setLongTimeout, type LongTimer } from '../util/timers.js';

/** GitLab Runner's `TokenResetIntervalFactor`: renew at 3/4 of the token's life. */
export const TOKEN_RESET_INTERVAL_FACTOR = 0.75;
const RETRY_MIN_MS = 60_000;
const RETRY_MAX_MS = 30 * 60_000;

/** The fields a renewal changes in an entry. */
export type TokenFields = Pick<RunnerConfig, 'token' | 'token_obtained_at' | 'token_expires_at'>;

export interface TokenRotationOptions {
  configPath: string;
  config: () => Readonly<Config>;
  logger: () => Logger;
  systemId?: string;
  /** The entry with `oldToken` now has `next`: the daemon uses it from now on. */
  rotated(oldToken: string, next: TokenFields): void;
  /** config.toml was written (`true`) or could not be (`false`), for the metrics. */
  saved?(ok: boolean): void;
  /** Wraps the client the reset goes through (metrics count the call). */
  wrapClient?<T extends object>(client: T, runner: RunnerConfig): T;
  /** Now, in ms (tests). */
  now?: () => number;
}

/** When `runner`'s token is due for renewal, or undefined when it does not expire. */
export function tokenResetTime(runner: Pick<RunnerConfig, 'token_obtained_at' | 'token_expires_at'>, seenAt: number): number | undefined {
  const expires = runner.token_expires_at?.getTime();
  if (expires === undefined) return undefined;
  const obtained = runner.token_obtained_at?.getTime() ?? Math.min(seenAt, expires);
  return obtained + TOKEN_RESET_INTERVAL_FACTOR * Math.max(0, expires - obtained);
}

/** The entry's `[runners.feature_flags]` only, as GitLab Runner reads this flag (not job variables). */
function rotationDisabled(runner: RunnerConfig): boolean {
  return runner.feature_flags.FF_DISABLE_AUTOMATIC_TOKEN_ROTATION === true;
}

export class TokenRotation {
  private timer: LongTimer | undefined;
  private stopped = false;
  private running: Promise<void> | undefined;
  /** When each token was first seen (for a token_expires_at without token_obtained_at). */
  private readonly seen = new Map<string, number>();
  /** Tokens whose renewal failed: when to try again, and the pause after that. */
  private readonly retry = new Map<string, { at: number; pauseMs: number }>();
  /** Renewed tokens not yet written to the file (old token → new fields). */
  private readonly unsaved = new Map<string, TokenFields>();
  /** Tokens due whose entry sets FF_DISABLE_AUTOMATIC_TOKEN_ROTATION: warned about once, not renewed. */
  private readonly notRenewed = new Set<string>();

  constructor(private readonly options: TokenRotationOptions) {}

  private get now(): number {
    return this.options.now?.() ?? Date.now();
  }

  /** Plans the next renewal from the config in force; call again after every reload. */
  schedule(): void {
    // A reload may have turned FF_DISABLE_AUTOMATIC_TOKEN_ROTATION off again.
    for (const token of this.notRenewed) {
      if (!this.options.config().runners.some((runner) => runner.token === token && rotationDisabled(runner))) this.notRenewed.delete(token);
    }
    this.timer?.clear();
    this.timer = undefined;
    if (this.stopped) return;
    let at = this.next()?.at;
    if (this.unsaved.size > 0) at = Math.min(at ?? Infinity, this.now + RETRY_MIN_MS);
    if (at === undefined) return;
    this.timer = setLongTimeout(() => void this.pass(), Math.max(0, at - this.now), { unref: true });
  }

  /** No more renewals; waits for one under way. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.timer?.clear();
    await this.running;
  }

  /** The entry due first, and when (a failed one not before its retry time). */
  private next(): { runner: RunnerConfig; at: number } | undefined {
    let best: { runner: RunnerConfig; at: number } | undefined;
    for (const runner of this.options.config().runners) {
      if (this.notRenewed.has(runner.token)) continue;
      if (!this.seen.has(runner.token)) this.seen.set(runner.token, this.now);
      let at = tokenResetTime(runner, this.seen.get(runner.token) ?? this.now);
      if (at === undefined) continue;
      const retry = this.retry.get(runner.token);
      if (retry && retry.at > at) at = retry.at;
      if (!best || at < best.at) best = { runner, at };
    }
    return best;
  }

  private pass(): Promise<void> {
    this.running = (async () => {
      await this.saveUnsaved();
      const next = this.next();
      if (next && next.at <= this.now) {
        if (rotationDisabled(next.runner)) this.warnNotRenewed(next.runner);
        else await this.renew(next.runner);
      }
    })()
      .catch((error: unknown) => this.options.logger().error({ err: error }, 'token renewal crashed'))
      .finally(() => {
        this.running = undefined;
        this.schedule();
      });
    return this.running;
  }

  /**
   * As GitLab Runner: with the flag set in the entry's `[runners.feature_flags]`, a token due is not
   * renewed and a warning says so (once; a reload that changes the token or the flag plans anew).
   */
  private warnNotRenewed(runner: RunnerConfig): void {
    this.notRenewed.add(runner.token);
    const name = `${shortToken(runner.token)}${this.options.systemId ? `-${this.options.systemId}` : ''}`;
    this.options.logger().warn(
      { runner: shortToken(runner.token), runner_name: runner.name, token_expires_at: runner.token_expires_at?.toISOString() },
      `Automatic token rotation is disabled for runner: ${name}. Your token is about to expire`,
    );
  }

  private async renew(runner: RunnerConfig): Promise<void> {
    const log = this.options.logger().child({ runner: shortToken(runner.token), runner_name: runner.name });
    const fields = await this.reset(runner, log);
    if (!fields) {
      const previous = this.retry.get(runner.token)?.pauseMs ?? 0;
      const pauseMs = Math.min(RETRY_MAX_MS, Math.max(RETRY_MIN_MS, previous * 2));
      this.retry.set(runner.token, { at: this.now + pauseMs, pauseMs });
      return;
    }
    this.retry.delete(runner.token);
    log.info({ token_expires_at: fields.token_expires_at?.toISOString() ?? 'never', new_runner: shortToken(fields.token) }, 'Resetting runner authentication token... succeeded');
    this.options.rotated(runner.token, fields);
    this.unsaved.set(runner.token, fields);
    await this.saveUnsaved();
  }

  /** The reset call; undefined (logged) when it did not give a new token. */
  private async reset(runner: RunnerConfig, log: Logger): Promise<TokenFields | undefined> {
    let client: Awaited<ReturnType<typeof connectRunnerApi>>;
    try {
      client = await connectRunnerApi({ url: runner.url, api: runner.api, tls: runnerTls(runner), ...(this.options.systemId ? { systemId: this.options.systemId } : {}) });
    } catch (error) {
      log.error({ err: (error as Error).message }, 'Resetting runner authentication token... client error');
      return undefined;
    }
    try {
      if (!(client instanceof RunnerApiV4Client)) {
        log.error({ token_expires_at: runner.token_expires_at?.toISOString() }, `Resetting runner authentication token... failed: ${runner.url} serves only the v1 runner API, which has no token reset; register the runner again before its token expires`);
        return undefined;
      }
      const api = this.options.wrapClient ? this.options.wrapClient(client, runner) : client;
      const result = await api.resetToken(runner.token);
      if (!result.token) {
        const check = result.status === 403 ? ' (check used token)' : '';
        log.error({ status: result.status, err: result.error?.message }, `Resetting runner authentication token... failed${check}`);
        return undefined;
      }
      const obtained = new Date(Math.floor(this.now / 1000) * 1000);
      const expires = result.tokenExpiresAt ? new Date(result.tokenExpiresAt) : undefined;
      return { token: result.token, token_obtained_at: obtained, token_expires_at: expires && !Number.isNaN(expires.getTime()) ? expires : undefined };
    } finally {
      await client.close();
    }
  }

  /** Writes every renewed token still missing from the file. */
  private async saveUnsaved(): Promise<void> {
    for (const [oldToken, fields] of this.unsaved) {
      const log = this.options.logger().child({ runner: shortToken(fields.token) });
      try {
        const written = await updateRunner(this.options.configPath, oldToken, {
          token: fields.token,
          token_obtained_at: fields.token_obtained_at ?? new Date(this.now),
          // GitLab Runner's zero value for a token that does not expire.
          token_expires_at: fields.token_expires_at ?? new Date('0001-01-01T00:00:00Z'),
        });
        this.unsaved.delete(oldToken);
        if (written) {
          this.options.saved?.(true);
          log.info({ config: this.options.configPath }, 'the renewed runner token was written to the config file');
        } else {
          log.warn({ config: this.options.configPath }, 'the renewed runner token was not written: its entry is no longer in the config file');
        }
      } catch (error) {
        this.options.saved?.(false);
        log.error({ config: this.options.configPath, err: (error as Error).message }, 'Failed to save config: the renewed runner token is in use but not in the config file (retried every minute; it is lost if the daemon stops first)');
      }
    }
  }
}
