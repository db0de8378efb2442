// System errors as people read them.

/** An errno as people read it: `permission denied (EACCES)`, from Node's own message. */
export function errnoReason(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  const message = (err as Error).message ?? String(err);
  const said = code ? new RegExp(`^${code}: ([^,]+)`).exec(message)?.[1] : undefined;
  return said ? `${said} (${code})` : (code ?? message);
}
