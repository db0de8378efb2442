// Review responses are written together, once per turn of the event loop, instead of each as
// soon as its decision is made. Node reads every request that arrived in one poll phase before
// this runs (setImmediate's check phase), so under concurrent load the replies of one turn leave
// back to back: the client (the API server, or a load generator) is woken once for them rather
// than once each, and the process goes back to reading sooner. On this machine that cut server
// CPU per SMC-R review by about a fifth under load (docs/benchmarks.md, "#25"). A lone request
// waits only for the rest of its own turn: microseconds, not a timer.
import type { FastifyReply } from 'fastify';

/** What a failed send is reported to; the reply's own error handling has already run. */
export type SendFailure = (err: unknown) => void;

export class ReplyBatch {
  private replies: FastifyReply[] = [];
  private payloads: string[] = [];
  private scheduled = false;

  constructor(private readonly onFailure: SendFailure) {}

  /** Sends `payload` on `reply` at the end of this turn of the event loop. */
  send(reply: FastifyReply, payload: string): void {
    this.replies.push(reply);
    this.payloads.push(payload);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(this.flush);
  }

  /** Replies waiting for the end of this turn. */
  get pending(): number {
    return this.replies.length;
  }

  private readonly flush = (): void => {
    const { replies, payloads } = this;
    this.replies = [];
    this.payloads = [];
    this.scheduled = false;
    for (let i = 0; i < replies.length; i++) {
      try {
        replies[i]!.send(payloads[i]);
      } catch (err) {
        // One reply that cannot be sent (its socket gone mid-write) must not hold up the rest.
        this.onFailure(err);
      }
    }
  };
}
