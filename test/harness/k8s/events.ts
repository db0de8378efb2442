// The Events the API server holds about one object, as the cluster suites read them: through the
// suite's own `kubectl get -o json`, so its retries and diagnostics apply.

/** What the suites read of an Event. */
export interface KubeEvent {
  readonly reason?: string;
  readonly message?: string;
  readonly type?: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  readonly [k: string]: any;
}

type GetJson = (...args: string[]) => Promise<{ items: KubeEvent[] }>;

/** An object as `kubectl get -o json` gives it: the API server has set its namespace and uid. */
interface Involved {
  readonly metadata: { readonly namespace?: string; readonly uid?: string };
}

/**
 * The Events on `object` once one of them has `reason`; undefined before (the shape `until` polls).
 */
export async function eventsWithReason(
  getJson: GetJson,
  object: Involved,
  reason: string,
): Promise<KubeEvent[] | undefined> {
  const { namespace, uid } = object.metadata;
  if (namespace === undefined || uid === undefined)
    throw new Error(
      'eventsWithReason: the object has no namespace or uid (not read from the API?)',
    );
  const events = (
    await getJson('events', '-n', namespace, '--field-selector', `involvedObject.uid=${uid}`)
  ).items;
  return events.some((e) => e.reason === reason) ? events : undefined;
}
