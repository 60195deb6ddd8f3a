// A scripted `fetch` for tests of the API clients: each call takes the next scripted reply and
// records the request. A streamed body is played step by step, one step per read (high-water
// mark 0, so nothing is read ahead), and errors when the request is aborted, as a browser's does.

import type { Fetch } from '../api/http.ts';

/** One step of a streamed body: text or bytes to send, or how the connection ends. */
export type Step = string | Uint8Array | { readonly error: string } | { readonly end: 'close' | 'hang' };

export type Reply =
  | { readonly kind: 'stream'; readonly steps: readonly Step[]; readonly contentType?: string }
  | { readonly kind: 'json'; readonly status: number; readonly body: unknown; readonly headers?: Readonly<Record<string, string>> }
  | { readonly kind: 'network-error'; readonly message: string };

export interface Recorded {
  readonly url: string;
  readonly headers: Headers;
  readonly signal: AbortSignal | null;
  readonly method: string;
  /** The body sent, when it was text (the API's JSON). */
  readonly body: string | null;
  /** When the request was made (the fake clock's `Date.now()` under fake timers). */
  readonly at: number;
}

export class FakeFetch {
  readonly requests: Recorded[] = [];
  private readonly replies: Reply[] = [];
  /** What to answer once the script runs out. */
  fallback: Reply = { kind: 'network-error', message: 'no reply scripted' };

  reply(...replies: Reply[]): this {
    this.replies.push(...replies);
    return this;
  }

  readonly fetch: Fetch = (input, init) => {
    const signal = init.signal ?? null;
    const body = typeof init.body === 'string' ? init.body : null;
    this.requests.push({ url: input, headers: new Headers(init.headers), signal, method: init.method ?? 'GET', body, at: Date.now() });
    const reply = this.replies.shift() ?? this.fallback;
    if (signal?.aborted === true) return Promise.reject(new DOMException('The operation was aborted.', 'AbortError'));
    switch (reply.kind) {
      case 'network-error':
        return Promise.reject(new TypeError(reply.message));
      case 'json':
        return Promise.resolve(
          new Response(JSON.stringify(reply.body), {
            status: reply.status,
            headers: { 'Content-Type': 'application/json', ...reply.headers },
          }),
        );
      case 'stream':
        return Promise.resolve(
          new Response(scripted(reply.steps, signal), {
            status: 200,
            headers: { 'Content-Type': reply.contentType ?? 'text/event-stream' },
          }),
        );
    }
  };
}

/** The connection ends cleanly here. */
export const CLOSE: Step = { end: 'close' };
/** The connection stays open with nothing more to send (until aborted). */
export const HANG: Step = { end: 'hang' };

function scripted(steps: readonly Step[], signal: AbortSignal | null): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let next = 0;
  let controller: ReadableStreamDefaultController<Uint8Array> | null = null;
  let closed = false;
  signal?.addEventListener('abort', () => {
    if (closed || controller === null) return;
    closed = true;
    controller.error(new DOMException('The operation was aborted.', 'AbortError'));
  });
  return new ReadableStream<Uint8Array>(
    {
      start(c) {
        controller = c;
      },
      pull(c) {
        if (closed) return undefined;
        const step = steps[next] ?? HANG;
        next += 1;
        if (typeof step === 'object' && 'end' in step) {
          if (step.end === 'hang') return new Promise<void>(() => undefined);
          closed = true;
          c.close();
        } else if (typeof step === 'string') {
          c.enqueue(encoder.encode(step));
        } else if (step instanceof Uint8Array) {
          c.enqueue(step);
        } else {
          closed = true;
          c.error(new TypeError(step.error));
        }
        return undefined;
      },
    },
    { highWaterMark: 0 },
  );
}

/** The SSE frame the sidecar sends for one trace event: `id:` its seq, `event:` its type. */
export function frame(seq: number, type: string, fields: Record<string, unknown> = {}): string {
  const data = JSON.stringify({ seq, runId: 'uid-1', ts: '2026-12-05T10:00:00.000Z', type, ...fields });
  return `id: ${seq}\nevent: ${type}\ndata: ${data}\n\n`;
}

/** The UTF-8 bytes of `text` cut every `size` bytes: lines, frames and characters split anywhere. */
export function byteChunks(text: string, size: number): Uint8Array[] {
  const bytes = new TextEncoder().encode(text);
  const out: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i += size) out.push(bytes.slice(i, i + size));
  return out;
}
