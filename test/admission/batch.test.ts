// ReplyBatch: replies decided in one turn of the event loop are sent together at its end, in
// order; one that cannot be sent is reported and does not hold up the others. The replies here
// are stand-ins recording what send() received (the batch calls nothing else on a reply); the
// real app, over TLS and HTTP/2, answers through it in app.test.ts, pinned.test.ts and tls.test.ts.
import type { FastifyReply } from 'fastify';
import { describe, expect, it } from 'vitest';
import { ReplyBatch } from '../../src/admission/batch.js';

function recorder(log: string[], fail = false): FastifyReply {
  return {
    send(payload: string) {
      if (fail) throw new Error(`socket gone for ${payload}`);
      log.push(payload);
      return this;
    },
  } as unknown as FastifyReply;
}

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('ReplyBatch', () => {
  it('sends nothing during the turn, then every reply of the turn in order', async () => {
    const sent: string[] = [];
    const batch = new ReplyBatch(() => expect.unreachable());
    for (let i = 0; i < 5; i++) batch.send(recorder(sent), `r${i}`);
    expect(sent).toEqual([]);
    expect(batch.pending).toBe(5);
    await turn();
    expect(sent).toEqual(['r0', 'r1', 'r2', 'r3', 'r4']);
    expect(batch.pending).toBe(0);
  });

  it('starts a new batch for replies decided in a later turn', async () => {
    const sent: string[] = [];
    const batch = new ReplyBatch(() => expect.unreachable());
    batch.send(recorder(sent), 'first');
    await turn();
    batch.send(recorder(sent), 'second');
    expect(sent).toEqual(['first']);
    await turn();
    expect(sent).toEqual(['first', 'second']);
  });

  it('reports a reply that cannot be sent and still sends the rest', async () => {
    const sent: string[] = [];
    const failures: unknown[] = [];
    const batch = new ReplyBatch((err) => failures.push(err));
    batch.send(recorder(sent), 'a');
    batch.send(recorder(sent, true), 'b');
    batch.send(recorder(sent), 'c');
    await turn();
    expect(sent).toEqual(['a', 'c']);
    expect(failures).toHaveLength(1);
    expect(String(failures[0])).toContain('socket gone for b');
  });
});
