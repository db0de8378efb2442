// The DRA driver's checkpoint: the claims it has prepared on this node, in one file of its own
// directory (<kubelet-dir>/plugins/erdma.smcr.erdma.io/checkpoint.json), so that a restarted
// driver (or kubelet) answers a claim prepared before exactly as the first time, without the
// API, and can say which claims hold a device when its health changes. Written whole to a
// temporary file and renamed (util/fs.ts): a crash leaves the old file or the new one.
import { mkdirSync, readFileSync, renameSync } from 'node:fs';
import { posix } from 'node:path';
import { writeAtomic } from '../util/fs.js';
import type { PreparedClaim } from './claim.js';

/** The format this driver writes; it reads it and every earlier one. */
export const CHECKPOINT_VERSION = 1;

/** What loading found, beside the claims: a file that was not whole, set aside. */
export interface Loaded {
  readonly claims: Map<string, PreparedClaim>;
  /** The path an unreadable checkpoint was moved to, and why it was unreadable. */
  readonly setAside?: { readonly path: string; readonly why: string };
}

export class Checkpoint {
  readonly path: string;

  constructor(
    /** The driver's own directory on the node. */
    dir: string,
    private readonly now: () => Date = () => new Date(),
  ) {
    this.path = posix.join(dir, 'checkpoint.json');
  }

  /**
   * The claims prepared, by UID. None when there is no file. A file that is not a whole checkpoint
   * (cut short, overwritten by something else) is moved aside, never deleted, and the driver starts
   * with none: every claim it is asked for again is read from the API, and unpreparing a claim
   * removes its CDI spec by UID whether or not the checkpoint knew it. A checkpoint of a newer
   * driver is refused: its meaning is not ours to guess (roll the driver forward again, or move it).
   */
  load(): Loaded {
    let text: string;
    try {
      text = readFileSync(this.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { claims: new Map() };
      throw err;
    }
    let parsed: { version?: unknown; claims?: unknown };
    try {
      parsed = JSON.parse(text) as typeof parsed;
      if (typeof parsed !== 'object' || parsed === null || !Array.isArray(parsed.claims))
        throw new Error('no list of claims');
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      const aside = `${this.path}.torn-${this.now().toISOString().replace(/[:.]/g, '-')}`;
      renameSync(this.path, aside);
      return { claims: new Map(), setAside: { path: aside, why } };
    }
    if (typeof parsed.version !== 'number' || parsed.version > CHECKPOINT_VERSION)
      throw new Error(
        `${this.path}: checkpoint version ${String(parsed.version)}, newer than this driver's ${CHECKPOINT_VERSION}: it was written by a newer erdma-smcr; run that version, or move the file away to start with no prepared claims`,
      );
    const claims = parsed.claims as PreparedClaim[];
    return { claims: new Map(claims.map((c) => [c.uid, c])) };
  }

  save(claims: ReadonlyMap<string, PreparedClaim>): void {
    mkdirSync(posix.dirname(this.path), { recursive: true });
    writeAtomic(
      this.path,
      `${JSON.stringify({ version: CHECKPOINT_VERSION, claims: [...claims.values()] }, null, 1)}\n`,
      0o644,
    );
  }
}
