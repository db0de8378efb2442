// Bounds on connections and HTTP/2 streams: a deadline for a connection's first request, a cap on
// open connections, and a cap on open streams across all sessions.
//
// Each TLS connection costs the webhook 45-65 KB (OpenSSL's record buffers, an HTTP/1 parser or
// an HTTP/2 session) and each open HTTP/2 stream about 9 KB, so a flood of either would take it
// past its memory limit; it would be OOM-killed and, with failurePolicy: Ignore, fail open.
//
// Past the connection cap, the oldest connection that never got a full response ("unproven") is
// closed first; when every connection has been answered at least once, the one idle the longest
// (no request in flight) is closed: the API server keeps a few connections busy, a flood that
// sent one review each and stayed open does not. A connection with a request in flight is never
// closed for the cap. Past the stream cap, the stream open the longest is cancelled: the API
// server sends a review in one go, so a stream still open after hundreds of others is a stall.
import { constants as http2constants, type ServerHttp2Stream } from 'node:http2';
import type { Socket } from 'node:net';

export interface GuardEntry {
  readonly socket: Socket;
  readonly timer: NodeJS.Timeout;
  proven: boolean;
  gone: boolean;
  /** Requests (HTTP/1) or streams (HTTP/2) in flight. */
  busy: number;
}

const ENTRY = Symbol('erdma-smcr connection guard');
type Guarded = { [ENTRY]?: GuardEntry };

/** The entry of a socket; an HTTP/2 session's socket proxy throws once the session let go of it. */
function entryOf(socket: unknown): GuardEntry | undefined {
  try {
    return (socket as Guarded | undefined)?.[ENTRY];
  } catch {
    return undefined;
  }
}

export class ConnectionGuard {
  private readonly unproven = new Set<GuardEntry>(); // insertion order: oldest first
  private readonly idle = new Set<GuardEntry>(); // proven, nothing in flight: least recently used first
  private open = 0;
  evicted = 0;

  constructor(
    private readonly maxConnections: number,
    private readonly firstRequestMs: number,
  ) {}

  get connections(): number {
    return this.open;
  }

  /** A TCP connection was accepted (before its TLS handshake). */
  accept(socket: Socket): void {
    const timer = setTimeout(() => this.drop(entry), this.firstRequestMs);
    timer.unref();
    const entry: GuardEntry = { socket, timer, proven: false, gone: false, busy: 0 };
    (socket as Socket & Guarded)[ENTRY] = entry;
    this.open += 1;
    this.unproven.add(entry);
    socket.once('close', () => this.forget(entry));
    while (this.open > this.maxConnections) {
      const victim = this.oldest(this.unproven, entry) ?? this.oldest(this.idle, entry);
      if (!victim) break;
      this.evicted += 1;
      this.drop(victim);
    }
  }

  private oldest(set: ReadonlySet<GuardEntry>, except: GuardEntry): GuardEntry | undefined {
    for (const e of set) if (e !== except) return e;
    return undefined;
  }

  /** The TLS socket of an accepted connection: it carries the same entry (its _parent is the TCP socket). */
  secured(tls: Socket & { _parent?: Socket }): void {
    const entry = (tls._parent as (Socket & Guarded) | undefined)?.[ENTRY];
    if (entry) (tls as Socket & Guarded)[ENTRY] = entry;
  }

  /** A request's headers arrived on this socket (an HTTP/1 socket, or an HTTP/2 session's socket proxy). */
  started(socket: unknown): void {
    const entry = entryOf(socket);
    if (!entry) return;
    if (!entry.proven) clearTimeout(entry.timer);
    entry.busy += 1;
    this.idle.delete(entry);
  }

  /** A request on this socket ended: its response was sent in full (the client is real), or it was cut off. */
  finished(socket: unknown, answered: boolean): void {
    const entry = entryOf(socket);
    if (!entry || entry.gone) return;
    entry.busy = Math.max(0, entry.busy - 1);
    if (answered && !entry.proven) {
      entry.proven = true;
      this.unproven.delete(entry);
    }
    if (entry.proven && entry.busy === 0) this.idle.add(entry);
  }

  isProven(socket: unknown): boolean {
    return entryOf(socket)?.proven === true;
  }

  private drop(entry: GuardEntry): void {
    this.forget(entry);
    entry.socket.destroy();
  }

  private forget(entry: GuardEntry): void {
    if (entry.gone) return;
    entry.gone = true;
    clearTimeout(entry.timer);
    this.unproven.delete(entry);
    this.idle.delete(entry);
    this.open -= 1;
  }
}

/** Open HTTP/2 streams across every session, capped: past the cap the oldest is cancelled. */
export class StreamGuard {
  private readonly streams = new Set<ServerHttp2Stream>(); // insertion order: oldest first
  cancelled = 0;

  constructor(private readonly maxStreams: number) {}

  get open(): number {
    return this.streams.size;
  }

  add(stream: ServerHttp2Stream): void {
    this.streams.add(stream);
    stream.once('close', () => this.streams.delete(stream));
    for (const oldest of this.streams) {
      if (this.streams.size <= this.maxStreams || oldest === stream) break;
      this.streams.delete(oldest);
      this.cancelled += 1;
      oldest.close(http2constants.NGHTTP2_CANCEL);
    }
  }
}
