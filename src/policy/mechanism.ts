// What a pod's TCP-to-SMC mechanism asks of the pod, from the nodes it may land on (the agent's
// smcr.erdma.io/mechanism label; docs/support-matrix.md). tcp2smc and bpf need nothing in the pod:
// the kernel does it. Nodes with AF_SMC only need the preload library in every container. A pod
// that may land on both kinds is kept to the in-kernel ones, where static binaries work too.
import { MECHANISM_ANNOTATION, NODE_LABELS, PRELOAD, SELECT_ENV } from '../constants.js';
import { arrayOf, isObject } from '../util/json.js';
import { nodeStatus } from './eligibility.js';
import { child } from './mutate.js';
import type { RuleContext } from './rules/rule.js';
import { Budget, placement, placementTooLarge } from './scheduling.js';
import type { JsonObject, NodeFacts } from './types.js';

/** none: nothing to do; inject: give the pod the preload library; avoid: keep it off preload nodes. */
export type PreloadPlan = 'none' | 'inject' | 'avoid';

/** The nodes to look at: the one a pod names, else those that can run SMC-R. */
function candidates(view: RuleContext['view'], nodeName: string | undefined): Iterable<NodeFacts> {
  if (nodeName === undefined) return view.nodes.usable(view.driverMode);
  const pinned = view.nodes.get(nodeName);
  return pinned ? [pinned] : [];
}

/** The pod asked for Alibaba's tcp2smc knob over the preload library (smcr.erdma.io/mechanism: tcp2smc). */
export const wantsTcp2smc = (ctx: RuleContext): boolean =>
  ctx.annotations[MECHANISM_ANNOTATION] === 'tcp2smc';

export function preloadPlan(ctx: RuleContext): PreloadPlan {
  const { view, loc } = ctx;
  if (!view.nodesKnown || view.nodes.preloadNodes === 0 || wantsTcp2smc(ctx)) return 'none';
  if (placementTooLarge(loc.spec, loc.prefix)) return 'none';
  const where = placement(loc.spec, loc.prefix);
  const budget = new Budget();
  const nodes = candidates(view, where.nodeName);
  let preload = false;
  let inKernel = false;
  for (const n of nodes) {
    if (budget.spent || (preload && inKernel)) break;
    if (nodeStatus(n, view.driverMode).state !== 'ok' || !where.matches(n, budget)) continue;
    if (n.labels[NODE_LABELS.mechanism] === 'preload') preload = true;
    else inKernel = true;
  }
  if (!preload) return 'none';
  return inKernel ? 'avoid' : 'inject';
}

const LIBRARY = `${PRELOAD.mountPath}/${PRELOAD.library}`;

/** The selection's variable set to `select` (ours: overwritten whatever the container said). */
function withSelection(env: unknown[], select: string): unknown[] {
  const i = env.findIndex((e) => isObject(e) && e.name === SELECT_ENV);
  if (i < 0) return [...env, { name: SELECT_ENV, value: select }];
  const e = env[i] as JsonObject;
  if (e.value === select && e.valueFrom === undefined) return env;
  const copy = [...env];
  copy[i] = { name: SELECT_ENV, value: select };
  return copy;
}

/** LD_PRELOAD with our library appended to what the container had (ld.so reads ':' or ' '). */
function withLibrary(env: unknown[]): unknown[] | undefined {
  const i = env.findIndex((e) => isObject(e) && e.name === 'LD_PRELOAD');
  if (i < 0) return [...env, { name: 'LD_PRELOAD', value: LIBRARY }];
  const e = env[i] as JsonObject;
  if (e.valueFrom !== undefined) return undefined; // not ours to rewrite: the plan warns
  const value = typeof e.value === 'string' ? e.value : '';
  if (value.split(/[: ]/).includes(LIBRARY)) return env;
  const copy = [...env];
  copy[i] = { ...e, value: value === '' ? LIBRARY : `${value}:${LIBRARY}` };
  return copy;
}

/**
 * The init container that copies the library from our image into the pod's emptyDir: first, so
 * that the pod's own init containers find it too. It runs as nobody, with no privilege and nothing
 * writable but that volume: what Pod Security's restricted profile asks of every container.
 */
function installer(image: string): JsonObject {
  return {
    name: PRELOAD.initContainer,
    image,
    command: [PRELOAD.installer, 'preload-install', PRELOAD.mountPath],
    resources: {
      requests: { cpu: '10m', memory: '8Mi' },
      limits: { cpu: '100m', memory: '16Mi' },
    },
    securityContext: {
      runAsNonRoot: true,
      runAsUser: 65532,
      runAsGroup: 65532,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    },
    volumeMounts: [{ name: PRELOAD.volume, mountPath: PRELOAD.mountPath }],
  };
}

/**
 * The container with LD_PRELOAD naming the library and the volume mounted read-only; `skipped`
 * when its LD_PRELOAD comes from valueFrom (then only the mount is added).
 */
function preloaded(c: JsonObject, select: string): { container: JsonObject; skipped: boolean } {
  const preload = withLibrary(arrayOf(c.env));
  const env = preload ? withSelection(preload, select) : undefined;
  const mounts = arrayOf(c.volumeMounts);
  const mounted = mounts.some((m) => isObject(m) && m.name === PRELOAD.volume);
  const mount = { name: PRELOAD.volume, mountPath: PRELOAD.mountPath, readOnly: true };
  return {
    container: {
      ...c,
      ...(env ? { env } : {}),
      ...(mounted ? {} : { volumeMounts: [...mounts, mount] }),
    },
    skipped: !env,
  };
}

/**
 * Gives the pod the preload library with no host path: an emptyDir, our init container filling it
 * from our image, and in every other container (init containers too) the volume read-only and
 * LD_PRELOAD naming the library after anything the container already preloads, and the pod's
 * selection in ERDMA_SMCR_SELECT (the library reads it at connect(), bind() and listen()). Returns the
 * containers whose LD_PRELOAD comes from valueFrom, which are left as they are.
 */
export function injectPreload(pod: JsonObject, image: string, select: string): string[] {
  const spec = child(pod, 'spec');
  const skipped: string[] = [];
  const volumes = arrayOf(spec.volumes);
  if (!volumes.some((v) => isObject(v) && v.name === PRELOAD.volume))
    spec.volumes = [...volumes, { name: PRELOAD.volume, emptyDir: { sizeLimit: '4Mi' } }];
  for (const key of ['initContainers', 'containers']) {
    if (!Array.isArray(spec[key])) continue;
    spec[key] = (spec[key] as unknown[]).map((c) => {
      if (!isObject(c) || c.name === PRELOAD.initContainer) return c;
      const out = preloaded(c, select);
      if (out.skipped) skipped.push(String(c.name));
      return out.container;
    });
  }
  const inits = arrayOf(spec.initContainers);
  if (!inits.some((c) => isObject(c) && c.name === PRELOAD.initContainer))
    spec.initContainers = [installer(image), ...inits];
  child(child(pod, 'metadata'), 'annotations')[MECHANISM_ANNOTATION] = 'preload';
  return skipped;
}

/** The requirement on the agent's mechanism label that goes with a plan. */
export function mechanismExpression(plan: 'inject' | 'avoid'): JsonObject {
  return {
    key: NODE_LABELS.mechanism,
    operator: plan === 'inject' ? 'In' : 'NotIn',
    values: ['preload'],
  };
}
