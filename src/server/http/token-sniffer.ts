/**
 * Finds the `token` parameter in the first bytes of a request body while it streams in, so the
 * server can authenticate a legacy client that sends its token only in the body (docs/protocol-v1.md §2.3:
 * a JSON, form-encoded or multipart body) before reading — and holding — the rest of it. Each
 * sniffer keeps only a few bytes of state; the body itself is buffered by the caller.
 *
 * The first top-level `token` wins here; the handler still checks the parameter the full parse
 * yields, so a body that names `token` twice cannot get further than its first value allows.
 */
import type { IncomingMessage } from 'node:http';
import busboy from 'busboy';

export interface TokenSniffer {
  /** Takes the next body bytes; returns the token once it has been seen whole. */
  feed(chunk: Buffer): string | undefined;
}

/** Longer than any token this server mints or accepts; a longer value is not captured. */
const MAX_TOKEN_BYTES = 4096;

/** A sniffer for the request's media type, or undefined for types that carry no parameters. */
export function createTokenSniffer(req: IncomingMessage): TokenSniffer | undefined {
  const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  if (type === 'application/json' || type.endsWith('+json')) return new JsonTokenSniffer();
  if (type === 'application/x-www-form-urlencoded') return new FormTokenSniffer();
  if (type === 'multipart/form-data') return multipartSniffer(req);
  return undefined;
}

type JsonState = 'start' | 'key' | 'in-key' | 'colon' | 'value' | 'in-string' | 'nested' | 'scalar' | 'after-value' | 'done';

/** A byte-level walk over the top-level members of a JSON object (structural bytes are ASCII). */
export class JsonTokenSniffer implements TokenSniffer {
  private state: JsonState = 'start';
  private escaped = false;
  private inNestedString = false;
  private depth = 0;
  private text: number[] = [];
  private capturing = false;
  private key = '';

  feed(chunk: Buffer): string | undefined {
    for (const byte of chunk) {
      const found = this.step(byte);
      if (found !== undefined) return found;
      if (this.state === 'done') return undefined;
    }
    return undefined;
  }

  private step(byte: number): string | undefined {
    const ws = byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
    switch (this.state) {
      case 'start':
        if (!ws) this.state = byte === 0x7b ? 'key' : 'done'; // `{`, or not an object: the full parse says why
        return undefined;
      case 'key':
        if (byte === 0x22) this.beginString('in-key', true);
        else if (!ws) this.state = 'done'; // `}` or malformed
        return undefined;
      case 'in-key':
        if (this.stringByte(byte)) {
          this.key = this.decoded() ?? '';
          this.state = 'colon';
        }
        return undefined;
      case 'colon':
        if (byte === 0x3a) this.state = 'value';
        else if (!ws) this.state = 'done';
        return undefined;
      case 'value':
        if (ws) return undefined;
        if (byte === 0x22) this.beginString('in-string', this.key === 'token');
        else if (byte === 0x7b || byte === 0x5b) {
          this.depth = 1;
          this.inNestedString = false;
          this.escaped = false;
          this.state = 'nested';
        } else this.state = 'scalar';
        return undefined;
      case 'in-string':
        if (!this.stringByte(byte)) return undefined;
        this.state = 'after-value';
        return this.key === 'token' ? this.decoded() : undefined;
      case 'nested':
        this.nestedByte(byte);
        return undefined;
      case 'scalar':
        if (byte === 0x2c) this.state = 'key';
        else if (byte === 0x7d) this.state = 'done';
        return undefined;
      case 'after-value':
        if (byte === 0x2c) this.state = 'key';
        else if (!ws) this.state = 'done';
        return undefined;
      default:
        return undefined;
    }
  }

  private beginString(next: JsonState, capture: boolean): void {
    this.state = next;
    this.escaped = false;
    this.capturing = capture;
    this.text = [0x22];
  }

  /** Consumes one byte of a string; true when it was the closing quote. */
  private stringByte(byte: number): boolean {
    if (this.capturing) {
      if (this.text.length > MAX_TOKEN_BYTES) this.capturing = false;
      else this.text.push(byte);
    }
    if (this.escaped) {
      this.escaped = false;
      return false;
    }
    if (byte === 0x5c) this.escaped = true;
    return byte === 0x22;
  }

  private decoded(): string | undefined {
    if (!this.capturing) return undefined;
    try {
      const value: unknown = JSON.parse(Buffer.from(this.text).toString('utf8'));
      return typeof value === 'string' && value !== '' ? value : undefined;
    } catch {
      return undefined;
    }
  }

  private nestedByte(byte: number): void {
    if (this.inNestedString) {
      if (this.escaped) this.escaped = false;
      else if (byte === 0x5c) this.escaped = true;
      else if (byte === 0x22) this.inNestedString = false;
      return;
    }
    if (byte === 0x22) this.inNestedString = true;
    else if (byte === 0x7b || byte === 0x5b) this.depth += 1;
    else if (byte === 0x7d || byte === 0x5d) {
      this.depth -= 1;
      if (this.depth === 0) this.state = 'after-value';
    }
  }
}

/** `name=value&…`: a pair is complete at its `&`; only the current pair's first bytes are kept. */
export class FormTokenSniffer implements TokenSniffer {
  private pair: number[] = [];
  private overflow = false;

  feed(chunk: Buffer): string | undefined {
    for (const byte of chunk) {
      if (byte !== 0x26) {
        if (this.pair.length <= MAX_TOKEN_BYTES + 16) this.pair.push(byte);
        else this.overflow = true;
        continue;
      }
      // A whole pair holds whole UTF-8 sequences, so decoding it alone is safe.
      const found = this.overflow ? undefined : new URLSearchParams(Buffer.from(this.pair).toString('utf8')).get('token');
      this.pair = [];
      this.overflow = false;
      if (found) return found;
    }
    return undefined;
  }
}

/** busboy emits a field when its part ends, synchronously inside `write`. */
function multipartSniffer(req: IncomingMessage): TokenSniffer | undefined {
  let parser: busboy.Busboy;
  try {
    parser = busboy({ headers: req.headers, limits: { fieldSize: MAX_TOKEN_BYTES, fields: 50, parts: 100 } });
  } catch {
    return undefined; // no boundary: the full parse answers 400
  }
  let token: string | undefined;
  let broken = false;
  parser.on('field', (name, value) => {
    if (name === 'token' && value !== '' && token === undefined) token = value;
  });
  parser.on('file', (_name, stream) => stream.resume());
  parser.on('error', () => {
    broken = true;
  });
  return {
    feed(chunk) {
      if (!broken && token === undefined) parser.write(chunk);
      return token;
    },
  };
}
