/**
 * Limits on a request body that hold while it streams in. A body that is not JSON is
 * refused first (415 `UNSUPPORTED_MEDIA_TYPE`, unread), then Hono's own `bodyLimit` stops
 * reading at the first chunk past `maxBytes` (413 `BODY_TOO_LARGE`), chunked bodies
 * included, and the whole body must arrive within `readTimeoutMs` (408
 * `REQUEST_TIMEOUT`). Whatever was not read is left to the server, which drains and
 * closes the connection; it is never buffered.
 */
import type { MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { PipelineError } from '../../errors';

export interface BodyLimitsOptions {
  /** bytes; default 64 KiB */
  maxBytes: number;
  /** how long the whole body may take to arrive, ms (pipeline.server.body-read-timeout) */
  readTimeoutMs: number;
}

export class BodyTooLargeError extends PipelineError {
  constructor(maxBytes: number) {
    super(`body exceeds ${maxBytes} bytes`, 'BODY_TOO_LARGE');
  }
}

export class UnsupportedMediaTypeError extends PipelineError {
  constructor() {
    super('Content-Type must be application/json', 'UNSUPPORTED_MEDIA_TYPE');
  }
}

/** `application/json` or `application/…+json`, with parameters. */
export function isJsonMediaType(type: string | undefined): boolean {
  return /^application\/([a-z0-9.+-]*\+)?json\s*(;.*)?$/i.test(type ?? '');
}

/** Whether the request says it carries a body (a length above 0, or chunks). */
function announcesBody(headers: Headers): boolean {
  const length = headers.get('content-length');
  return headers.has('transfer-encoding') || (length !== null && length.trim() !== '0');
}

export class RequestTimeoutError extends PipelineError {
  constructor(readTimeoutMs: number) {
    super(`the request body did not arrive within ${readTimeoutMs} ms`, 'REQUEST_TIMEOUT');
  }
}

/** `body`, erroring with RequestTimeoutError once `deadline` (epoch ms) passes mid-read. */
function withReadDeadline(body: ReadableStream<Uint8Array>, deadline: number, readTimeoutMs: number): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        let timer: NodeJS.Timeout | undefined;
        const expired = new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new RequestTimeoutError(readTimeoutMs)), Math.max(0, deadline - Date.now()));
        });
        try {
          const chunk = await Promise.race([reader.read(), expired]);
          if (chunk.done) controller.close();
          else controller.enqueue(chunk.value);
        } catch (err) {
          reader.cancel(err).catch(() => undefined);
          controller.error(err);
        } finally {
          clearTimeout(timer);
        }
      },
      cancel(reason) {
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  ); // pull only when read: nothing past the limit is taken in ahead
}

export function bodyLimits(options: BodyLimitsOptions): MiddlewareHandler {
  if (!(options.maxBytes > 0) || !(options.readTimeoutMs > 0)) throw new TypeError('bodyLimits: maxBytes and readTimeoutMs must be positive');
  const limit = bodyLimit({
    maxSize: options.maxBytes,
    onError: () => {
      throw new BodyTooLargeError(options.maxBytes);
    },
  });
  return async function bodyLimitsMiddleware(c, next) {
    const raw = c.req.raw;
    // The media type first (DESIGN: 415 before 413): an oversized text/plain body is refused for what it is, unread.
    if (announcesBody(raw.headers) && !isJsonMediaType(raw.headers.get('content-type') ?? undefined)) throw new UnsupportedMediaTypeError();
    if (raw.body) {
      const body = withReadDeadline(raw.body, Date.now() + options.readTimeoutMs, options.readTimeoutMs);
      c.req.raw = new Request(raw.url, { method: raw.method, headers: raw.headers, signal: raw.signal, body, duplex: 'half' } as RequestInit);
    }
    return limit(c, next);
  };
}
