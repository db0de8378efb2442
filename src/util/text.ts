// Text that comes from a caller, made safe to repeat: clipped to a length a message or a log line
// can carry. A request may hold megabytes in any string; an error or a log line must not repeat
// them whole.

/** Longest caller-supplied string repeated: a Kubernetes name is at most 253 bytes. */
export const CLIP_AT = 253;

/** `s` as it is when short, else its start and how long it was. */
export function clip(s: string, max = CLIP_AT): string {
  return s.length <= max ? s : `${s.slice(0, max)}...(${s.length} chars)`;
}

/** A caller's value as JSON (strings quoted), clipped: for "got ..." in messages. */
export function quoted(v: unknown, max = 64): string {
  if (typeof v === 'string') return JSON.stringify(clip(v, max));
  const json = JSON.stringify(v ?? null) ?? String(v);
  return clip(json, max);
}
