// ReplyBatch: on a server under concurrent load, reviews that arrive in one turn of the event
// loop are decided at its end, all of them, then answered, in order, and only then recorded (each
// answer's `after`); on a quiet server (the last turn answered one review at most) the first
// review of a turn is answered at once and any others of that turn are batched. A decision that
// throws is answered with its error (fastify's Reply.send routes an Error to the error handler),
// and a reply that cannot be sent is reported without holding up the others. The replies here
// are stand-ins recording what send() received (the batch calls nothing else on a reply); the
// real app answers through it over TLS and HTTP/2 in app.test.ts, hostile.test.ts,
// pinned.test.ts and tls.test.ts, where a bad review's 400 comes through the error handler.
import type { FastifyReply } from 'fastify';
import { describe, expect, it } from 'vitest';
import { ReplyBatch } from '../../../src/admission/batch.js';

function recorder(events: string[], fail = false): FastifyReply {
  return {
    send(payload: unknown) {
      if (fail) throw new Error(`socket gone for ${String(payload)}`);
      events.push(
        payload instanceof Error ? `error ${payload.message}` : `sent ${String(payload)}`,
      );
      return this;
    },
  } as unknown as FastifyReply;
}

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
const never = (): void => expect.unreachable();

/** A batch that has seen concurrent load: its last turn answered two reviews. */
async function busy(batch: ReplyBatch): Promise<void> {
  const ignored: string[] = [];
  batch.answer(recorder(ignored), () => ({ payload: 'warm-up 1' }));
  batch.answer(recorder(ignored), () => ({ payload: 'warm-up 2' }));
  await turn();
  expect(ignored).toEqual(['sent warm-up 1', 'sent warm-up 2']);
}

describe('ReplyBatch', () => {
  it('decides nothing during the turn, then every review of the turn, then sends every reply in order', async () => {
    const events: string[] = [];
    const batch = new ReplyBatch(never);
    await busy(batch);
    for (let i = 0; i < 3; i++) {
      batch.answer(recorder(events), () => {
        events.push(`decided r${i}`);
        return { payload: `r${i}` };
      });
    }
    expect(events).toEqual([]);
    expect(batch.pending).toBe(3);
    await turn();
    expect(events).toEqual([
      'decided r0',
      'decided r1',
      'decided r2',
      'sent r0',
      'sent r1',
      'sent r2',
    ]);
    expect(batch.pending).toBe(0);
  });

  it("runs every answer's after once every reply of the batch is sent, in order", async () => {
    const events: string[] = [];
    const batch = new ReplyBatch(never);
    await busy(batch);
    for (let i = 0; i < 3; i++) {
      batch.answer(recorder(events), () => ({
        payload: `r${i}`,
        after: () => events.push(`recorded r${i}`),
      }));
    }
    await turn();
    expect(events).toEqual([
      'sent r0',
      'sent r1',
      'sent r2',
      'recorded r0',
      'recorded r1',
      'recorded r2',
    ]);
  });

  it('records nothing for a decision that throws, and reports an after that throws without skipping the rest', async () => {
    const events: string[] = [];
    const failures: unknown[] = [];
    const batch = new ReplyBatch((err) => failures.push(err));
    await busy(batch);
    batch.answer(recorder(events), () => ({
      payload: 'a',
      after: () => {
        throw new Error('log gone');
      },
    }));
    batch.answer(recorder(events), () => {
      throw new Error('bad review');
    });
    batch.answer(recorder(events), () => ({
      payload: 'c',
      after: () => events.push('recorded c'),
    }));
    await turn();
    expect(events).toEqual(['sent a', 'error bad review', 'sent c', 'recorded c']);
    expect(failures.map(String)).toEqual(['Error: log gone']);
  });

  it('starts a new batch for reviews that arrive in a later turn', async () => {
    const events: string[] = [];
    const batch = new ReplyBatch(never);
    await busy(batch);
    batch.answer(recorder(events), () => ({ payload: 'first' }));
    batch.answer(recorder(events), () => ({ payload: 'second' }));
    await turn();
    batch.answer(recorder(events), () => ({ payload: 'third' }));
    expect(events).toEqual(['sent first', 'sent second']);
    await turn();
    expect(events).toEqual(['sent first', 'sent second', 'sent third']);
  });

  it('on a quiet server answers the first review of a turn at once, decided, sent and recorded, and batches the rest of the turn', async () => {
    const events: string[] = [];
    const batch = new ReplyBatch(never);
    const review = (name: string) => (): { payload: string; after: () => void } => {
      events.push(`decided ${name}`);
      return { payload: name, after: () => events.push(`recorded ${name}`) };
    };
    batch.answer(recorder(events), review('lone'));
    expect(events).toEqual(['decided lone', 'sent lone', 'recorded lone']);
    expect(batch.pending).toBe(0);
    batch.answer(recorder(events), review('second'));
    batch.answer(recorder(events), review('third'));
    expect(events).toHaveLength(3);
    expect(batch.pending).toBe(2);
    await turn();
    expect(events.slice(3)).toEqual([
      'decided second',
      'decided third',
      'sent second',
      'sent third',
      'recorded second',
      'recorded third',
    ]);
  });

  it('batches every review after a turn with several, and answers at once again after a turn with one', async () => {
    const events: string[] = [];
    const batch = new ReplyBatch(never);
    await busy(batch);
    batch.answer(recorder(events), () => ({ payload: 'batched' }));
    expect(events).toEqual([]);
    await turn();
    expect(events).toEqual(['sent batched']);
    // That turn answered one review: the server is quiet again.
    batch.answer(recorder(events), () => ({ payload: 'at once' }));
    expect(events).toEqual(['sent batched', 'sent at once']);
    await turn();
    // A turn in which nothing arrived leaves it quiet.
    await turn();
    batch.answer(recorder(events), () => ({ payload: 'at once again' }));
    expect(events.at(-1)).toBe('sent at once again');
  });

  it('on a quiet server answers a first review that throws with its error, at once', () => {
    const events: string[] = [];
    const batch = new ReplyBatch(never);
    batch.answer(recorder(events), () => {
      throw new Error('bad review');
    });
    expect(events).toEqual(['error bad review']);
  });

  it('answers a decision that throws with its error (a non-Error wrapped in one), and the rest as usual', async () => {
    const events: string[] = [];
    const batch = new ReplyBatch(never);
    await busy(batch);
    batch.answer(recorder(events), () => ({ payload: 'a' }));
    batch.answer(recorder(events), () => {
      throw new Error('bad review');
    });
    batch.answer(recorder(events), () => {
      throw 'not an Error';
    });
    batch.answer(recorder(events), () => ({ payload: 'd' }));
    await turn();
    expect(events).toEqual(['sent a', 'error bad review', 'error not an Error', 'sent d']);
  });

  it('reports a reply that cannot be sent and still sends the rest', async () => {
    const events: string[] = [];
    const failures: unknown[] = [];
    const batch = new ReplyBatch((err) => failures.push(err));
    await busy(batch);
    batch.answer(recorder(events), () => ({ payload: 'a' }));
    batch.answer(recorder(events, true), () => ({ payload: 'b' }));
    batch.answer(recorder(events), () => ({ payload: 'c' }));
    await turn();
    expect(events).toEqual(['sent a', 'sent c']);
    expect(failures).toHaveLength(1);
    expect(String(failures[0])).toContain('socket gone for b');
  });

  it('answers a full batch at once, and the rest of the turn at its end', async () => {
    const events: string[] = [];
    const batch = new ReplyBatch(never, 3);
    await busy(batch);
    for (let i = 0; i < 4; i++) batch.answer(recorder(events), () => ({ payload: `r${i}` }));
    expect(events).toEqual(['sent r0', 'sent r1', 'sent r2']);
    expect(batch.pending).toBe(1);
    await turn();
    expect(events).toEqual(['sent r0', 'sent r1', 'sent r2', 'sent r3']);
    // A turn whose batches were all full leaves nothing behind, and the next turn batches again.
    for (let i = 4; i < 7; i++) batch.answer(recorder(events), () => ({ payload: `r${i}` }));
    await turn();
    batch.answer(recorder(events), () => ({ payload: 'r7' }));
    expect(events).toHaveLength(7);
    await turn();
    expect(events.at(-1)).toBe('sent r7');
  });

  it('answers at once when the reviews waiting hold maxBytes of request body, and counts anew after', async () => {
    const events: string[] = [];
    const batch = new ReplyBatch(never, 64, 1000);
    await busy(batch);
    batch.answer(recorder(events), () => ({ payload: 'small' }), 100);
    batch.answer(recorder(events), () => ({ payload: 'large' }), 900);
    expect(events).toEqual(['sent small', 'sent large']);
    batch.answer(recorder(events), () => ({ payload: 'next' }), 500);
    expect(batch.pending).toBe(1);
    await turn();
    expect(events.at(-1)).toBe('sent next');
  });
});
