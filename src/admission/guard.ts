// Bounds on connections that have not shown they are real clients: a deadline for the first
// request, and a cap on open connections that evicts the oldest unproven one first.
//
// Each TLS connection costs the webhook 45-65 KB (OpenSSL's record buffers, an HTTP/1 parser or
// an HTTP/2 session), so a flood of connections that never finish a request would take it past
// its memory limit; it would be OOM-killed and, with failurePolicy: Ignore, fail open. The API
// server keeps a few long-lived connections that have answered requests ("proven"), and those
// are never evicted: only connections that have not yet received a complete response are.
import type { Socket } from 'node:net';

export interface GuardEntry {
  readonly socket: Socket;
  readonly timer: NodeJS.Timeout;
  proven: boolean;
  gone: boolean;
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
    const entry: GuardEntry = { socket, timer, proven: false, gone: false };
    (socket as Socket & Guarded)[ENTRY] = entry;
    this.open += 1;
    this.unproven.add(entry);
    socket.once('close', () => this.forget(entry));
    for (const oldest of this.unproven) {
      if (this.open <= this.maxConnections || oldest === entry) break;
      this.evicted += 1;
      this.drop(oldest);
    }
  }

  /** The TLS socket of an accepted connection: it carries the same entry (its _parent is the TCP socket). */
  secured(tls: Socket & { _parent?: Socket }): void {
    const entry = (tls._parent as (Socket & Guarded) | undefined)?.[ENTRY];
    if (entry) (tls as Socket & Guarded)[ENTRY] = entry;
  }

  /** A request's headers arrived on this socket (an HTTP/1 socket, or an HTTP/2 session's socket proxy). */
  started(socket: unknown): void {
    const entry = entryOf(socket);
    if (entry && !entry.proven) clearTimeout(entry.timer);
  }

  /** A response on this socket was sent in full: the client is real. */
  proved(socket: unknown): void {
    const entry = entryOf(socket);
    if (!entry || entry.proven) return;
    entry.proven = true;
    this.unproven.delete(entry);
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
    this.open -= 1;
  }
}
