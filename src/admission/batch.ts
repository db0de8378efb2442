// Reviews are decided and answered together, once per turn of the event loop, instead of each
// as soon as its body is parsed. Node reads every request that arrived in one poll phase before
// this runs (setImmediate's check phase), so under concurrent load the reviews of one turn are
// decided back to back (the policy's code and data stay in the CPU's caches instead of being
// interleaved with TLS and HTTP parsing), and their replies leave back to back: the client (the
// API server, or a load generator) is woken once for them rather than once each. On this machine
// that cut server CPU per SMC-R review by about a quarter under load (docs/benchmarks.md, "#25").
// What a review records (its log line, its metrics) waits until every reply of the batch is sent:
// at a steady 500 reviews/s that took about 25 µs off each response (docs/benchmarks.md, "#25").
// A server that is not under concurrent load (the last turn that answered anything answered one
// review) decides the first review of a turn at once: nothing would share its batch, and waiting
// for the end of the turn only delayed it (docs/benchmarks.md, "Round 7"). Any further review of
// that turn is batched, and a turn with more than one review keeps the next turn batched too.
// A turn that brings many reviews (hundreds of HTTP/2 streams at once) is answered every `max`
// reviews, so no reply waits for more than `max` decisions before its own is sent; and as soon as
// the reviews waiting hold `maxBytes` of request body, so that large reviews, whose decoded
// objects take many times their size in memory, are decided one after another instead of all
// being held at once.
import type { FastifyReply } from 'fastify';

/** A decided review: the reply's payload, and what to record once the replies are sent. */
export interface Answer {
  readonly payload: string;
  readonly after?: () => void;
}

/** Decides a review; a throw is answered through fastify's error handler. */
export type Work = () => Answer;

/** What a failed send, or a failed `after`, is reported to; the reply's own error handling has already run. */
export type SendFailure = (err: unknown) => void;

export class ReplyBatch {
  private replies: FastifyReply[] = [];
  private work: Work[] = [];
  /** Request body bytes of the reviews waiting. */
  private bytes = 0;
  private scheduled = false;
  /** Reviews answered in this turn of the event loop so far, at once or batched. */
  private inTurn = 0;
  /** The last turn that answered any review answered only one: no concurrent load. */
  private quiet = true;

  /** Reviews decided in one go at most: about 64 × 40 µs = 2.5 ms of waiting under load. */
  static readonly DEFAULT_MAX = 64;
  /** Request body bytes of the reviews waiting at most: 64 ordinary reviews hold about 300 KiB. */
  static readonly DEFAULT_MAX_BYTES = 1024 * 1024;

  constructor(
    private readonly onFailure: SendFailure,
    private readonly max = ReplyBatch.DEFAULT_MAX,
    private readonly maxBytes = ReplyBatch.DEFAULT_MAX_BYTES,
  ) {}

  /**
   * Decides `work` and sends its payload on `reply`: at once when it is the first review of a
   * turn on a quiet server, else at the end of this turn of the event loop (at once when `max`
   * reviews, or `maxBytes` of their bodies, wait). Runs its `after` once every reply of its batch
   * has been sent. `bytes` is the size of the review's request body.
   */
  answer(reply: FastifyReply, work: Work, bytes = 0): void {
    this.inTurn += 1;
    this.endTurnLater();
    if (this.quiet && this.inTurn === 1) {
      this.run([reply], [work]);
      return;
    }
    this.replies.push(reply);
    this.work.push(work);
    this.bytes += bytes;
    if (this.replies.length >= this.max || this.bytes >= this.maxBytes) this.flush();
  }

  /** Replies waiting for the end of this turn. */
  get pending(): number {
    return this.replies.length;
  }

  private endTurnLater(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(this.endOfTurn);
  }

  private readonly endOfTurn = (): void => {
    this.scheduled = false;
    this.quiet = this.inTurn <= 1;
    this.inTurn = 0;
    this.flush();
  };

  private flush(): void {
    const { replies, work } = this;
    if (replies.length === 0) return; // a full batch was answered before the turn ended
    this.replies = [];
    this.work = [];
    this.bytes = 0;
    this.run(replies, work);
  }

  /** Every decision first, then every send, then what each decision records. */
  private run(replies: readonly FastifyReply[], work: readonly Work[]): void {
    const answers: (Answer | Error)[] = work.map((w) => {
      try {
        return w();
      } catch (err) {
        // fastify's Reply.send hands an Error to the error handler, as it does for a route's throw.
        return err instanceof Error ? err : new Error(String(err));
      }
    });
    for (let i = 0; i < replies.length; i++) {
      const answer = answers[i]!;
      try {
        replies[i]!.send(answer instanceof Error ? answer : answer.payload);
      } catch (err) {
        // One reply that cannot be sent (its socket gone mid-write) must not hold up the rest.
        this.onFailure(err);
      }
    }
    for (const answer of answers) {
      if (answer instanceof Error || answer.after === undefined) continue;
      try {
        answer.after();
      } catch (err) {
        this.onFailure(err);
      }
    }
  }
}
