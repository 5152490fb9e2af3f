/** Reading a body only as far as its sender is trusted: finding a body's token early, and the shared byte pool. */
import { describe, expect, it } from 'vitest';
import { ByteBudget } from '../../src/server/http/byte-budget.js';
import { FormTokenSniffer, JsonTokenSniffer, type TokenSniffer } from '../../src/server/http/token-sniffer.js';

/** Feeds `text` one byte at a time (the worst split) and returns what the sniffer found. */
function sniffBytewise(sniffer: TokenSniffer, text: string): string | undefined {
  for (const byte of Buffer.from(text)) {
    const found = sniffer.feed(Buffer.from([byte]));
    if (found !== undefined) return found;
  }
  return undefined;
}

describe('finding the token in a JSON body as it streams in', () => {
  it('finds a top-level token after a nested info object, split anywhere', () => {
    const body = JSON.stringify({ info: { name: 'x', token: 'nested-not-this', features: { a: [1, '}"{'] } }, token: 'tok\u00e9n"1', trace: 'long' });
    expect(sniffBytewise(new JsonTokenSniffer(), body)).toBe('tok\u00e9n"1');
  });

  it('finds nothing when the token comes only after the part that was read', () => {
    const sniffer = new JsonTokenSniffer();
    expect(sniffer.feed(Buffer.from('{"state":"success","trace":"aaaa'))).toBeUndefined();
  });

  it('ignores a token that is not a string and stops at the end of the object', () => {
    expect(sniffBytewise(new JsonTokenSniffer(), '{"token": 12, "a": null} {"token":"late"}')).toBeUndefined();
    expect(sniffBytewise(new JsonTokenSniffer(), '["token","x"]')).toBeUndefined();
  });
});

describe('finding the token in a form body', () => {
  it('finds a complete, percent-encoded token pair', () => {
    expect(sniffBytewise(new FormTokenSniffer(), 'state=running&token=a%20b%C3%A9&trace=xxx')).toBe('a b\u00e9');
  });
});

describe('the body byte pool', () => {
  it('grants reservations in arrival order and lets an aborted waiter go', async () => {
    const pool = new ByteBudget(100);
    const never = new AbortController().signal;
    const first = await pool.acquire(80, never);
    const order: string[] = [];
    const gone = new AbortController();
    const abandoned = pool.acquire(50, gone.signal).catch((error: Error) => order.push(`abandoned: ${error.message}`));
    const second = pool.acquire(50, never).then((reservation) => {
      order.push('second');
      return reservation;
    });
    gone.abort();
    await abandoned;
    expect(order).toEqual(['abandoned: client went away']);
    first.release();
    (await second).release();
    expect(order).toEqual(['abandoned: client went away', 'second']);
    expect(pool.inUse).toBe(0);
  });

  it('cuts a reservation larger than the pool to the pool, so it still runs alone', async () => {
    const pool = new ByteBudget(10);
    const reservation = await pool.acquire(1000, new AbortController().signal);
    expect(pool.inUse).toBe(10);
    reservation.shrinkTo(4); // a body smaller than reserved gives the rest back at once
    expect(pool.inUse).toBe(4);
    reservation.release();
    reservation.release(); // giving back twice is harmless
    expect(pool.inUse).toBe(0);
  });
});
