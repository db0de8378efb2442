// Reading request bodies within two bounds: bodyLimit per request, and a budget for the bytes
// that all unfinished bodies hold together, so slow clients cannot pile up memory.
import type { IncomingMessage } from 'node:http';
import type { Http2ServerRequest } from 'node:http2';
import { AppError } from '../errors.js';

type RawRequest = IncomingMessage | Http2ServerRequest;

/** One body being received: its bytes so far and how to drop its request. */
interface Pending {
  bytes: number;
  readonly drop: () => void;
}

/**
 * The shared budget. When a chunk would take the total over the limit, the bodies that have been
 * arriving the longest are dropped first (their connection or stream is destroyed): the API
 * server sends a review in one go, so a body still open after others started is a slow client's.
 */
export class BodyBudget {
  private readonly pending = new Set<Pending>(); // insertion order: oldest first
  private used = 0;
  dropped = 0;

  constructor(readonly limit: number) {}

  get bytes(): number {
    return this.used;
  }

  open(drop: () => void): Pending {
    const p: Pending = { bytes: 0, drop };
    this.pending.add(p);
    return p;
  }

  /** Accounts n more bytes for p, dropping older bodies while over the limit. */
  take(p: Pending, n: number): void {
    if (this.used + n > this.limit) this.makeRoom(p, n);
    p.bytes += n;
    this.used += n;
  }

  private makeRoom(p: Pending, n: number): void {
    for (const old of this.pending) {
      if (this.used + n <= this.limit || old === p) break;
      this.release(old);
      this.dropped += 1;
      old.drop();
    }
  }

  release(p: Pending): void {
    if (!this.pending.delete(p)) return;
    this.used -= p.bytes;
    p.bytes = 0;
  }
}

/** Throws 415 for a charset other than UTF-8: reviews are UTF-8 JSON, and a UTF-16 body read as UTF-8 is garbage. */
export function checkCharset(contentType: string | undefined): void {
  const m = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(contentType ?? '');
  if (m && !/^utf-?8$/i.test(m[1] ?? '')) {
    throw new AppError(
      'UNSUPPORTED_MEDIA_TYPE',
      `charset ${(m[1] ?? '').slice(0, 40)} is not supported; send application/json in UTF-8`,
    );
  }
}

function declaredLength(raw: RawRequest): number | undefined {
  const v = raw.headers['content-length'];
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!/^\d+$/.test(String(v)) || !Number.isSafeInteger(n))
    throw new AppError('REVIEW_NOT_JSON', 'Content-Length is not a number');
  return n;
}

export const BODY_TOO_LARGE_MESSAGE = 'request body is larger than the configured limit';

function tooLarge(): AppError {
  return new AppError('BODY_TOO_LARGE', BODY_TOO_LARGE_MESSAGE);
}

/** Reads the body of raw as UTF-8 text within limit and the budget; calls done once. */
export function readBody(
  raw: RawRequest,
  limit: number,
  budget: BodyBudget,
  done: (err: Error | null, text?: string) => void,
): void {
  let finished = false;
  const finish = (err: Error | null, text?: string): void => {
    if (finished) return;
    finished = true;
    budget.release(pending);
    raw.removeListener('data', onData);
    raw.removeListener('end', onEnd);
    raw.removeListener('error', onGone);
    raw.removeListener('close', onGone);
    done(err, text);
  };
  const chunks: Buffer[] = [];
  let received = 0;
  const onData = (chunk: Buffer): void => {
    received += chunk.length;
    if (received > limit) {
      chunks.length = 0;
      finish(tooLarge());
      return;
    }
    budget.take(pending, chunk.length);
    if (!finished) chunks.push(chunk);
  };
  const onEnd = (): void => {
    if (expected !== undefined && received !== expected) {
      finish(
        new AppError(
          'REVIEW_NOT_JSON',
          'request body is shorter or longer than its Content-Length',
        ),
      );
      return;
    }
    // A review usually arrives in one chunk: decode it as it is rather than copy it first.
    const whole = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, received);
    finish(null, whole.toString('utf8'));
  };
  // A client that goes away mid-body ('close', or 'error' with 'aborted'/ECONNRESET) is not our
  // failure: a 4xx, no 5xx and no error log.
  const onGone = (): void =>
    finish(new AppError('REVIEW_NOT_JSON', 'connection closed before the body was complete'));
  const pending = budget.open(() => {
    chunks.length = 0;
    finish(
      new AppError('BODY_TOO_LARGE', 'dropped: unfinished request bodies hold too much memory'),
    );
    raw.destroy();
  });
  let expected: number | undefined;
  try {
    checkCharset(raw.headers['content-type']);
    expected = declaredLength(raw);
    if (expected !== undefined && expected > limit) throw tooLarge();
  } catch (err) {
    finish(err as Error);
    return;
  }
  raw.on('data', onData);
  raw.on('end', onEnd);
  raw.on('error', onGone);
  raw.on('close', onGone);
}
