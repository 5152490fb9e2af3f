/** Reading a server-sent event stream in a test, event by event, with the page's cookie. */

export interface SseEvent {
  event: string;
  id: string | undefined;
  data: string;
}

export interface SseReader {
  /** The next event (waits for it); throws when the stream ends first. */
  next(): Promise<SseEvent>;
  /** Events until `predicate` holds for one (included). */
  until(predicate: (event: SseEvent) => boolean): Promise<SseEvent[]>;
  close(): void;
}

export async function openSse(url: string, headers: Record<string, string>): Promise<SseReader> {
  const controller = new AbortController();
  const response = await fetch(url, { headers: { accept: 'text/event-stream', ...headers }, signal: controller.signal });
  if (response.status !== 200 || !response.body) throw new Error(`event stream answered ${response.status}: ${await response.text()}`);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  const queue: SseEvent[] = [];
  const parse = (): void => {
    for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const event: SseEvent = { event: 'message', id: undefined, data: '' };
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) continue;
        const at = line.indexOf(':');
        const field = at < 0 ? line : line.slice(0, at);
        const value = at < 0 ? '' : line.slice(at + 1).replace(/^ /, '');
        if (field === 'event') event.event = value;
        else if (field === 'id') event.id = value;
        else if (field === 'data') data.push(value);
      }
      if (data.length > 0 || event.event !== 'message') queue.push({ ...event, data: data.join('\n') });
    }
  };
  const next = async (): Promise<SseEvent> => {
    for (;;) {
      const event = queue.shift();
      if (event) return event;
      const { value, done } = await reader.read();
      if (done) throw new Error('the event stream ended');
      buffer += value;
      parse();
    }
  };
  return {
    next,
    async until(predicate) {
      const seen: SseEvent[] = [];
      for (;;) {
        const event = await next();
        seen.push(event);
        if (predicate(event)) return seen;
      }
    },
    close: () => controller.abort(),
  };
}
