// reserved-ports: a pod that declares a port inside a range SMC's nodes reserve in every network
// namespace (the erdma driver in compat mode: reserve_ports_base; Alibaba's smc: rsvd_ports_base)
// cannot listen on it there. The agent reads the real values on each node and labels them; the
// view counts the distinct ranges, so this costs a handful of comparisons whatever the cluster's
// size. A warning, not a denial: the pod may bind that port only on nodes without the reservation.
import { NODE_LABELS } from '../../constants.js';
import { arrayOf, isObject } from '../../util/json.js';
import type { JsonObject } from '../types.js';
import { none, type Rule } from './rule.js';

const SETTING: Readonly<Record<string, string>> = {
  [NODE_LABELS.erdmaReservedPorts]:
    'the erdma driver in compat mode reserves them (module parameter reserve_ports_base)',
  [NODE_LABELS.smcReservedPorts]:
    "Alibaba's smc module reserves them (module parameter rsvd_ports_base)",
};

interface Declared {
  readonly port: number;
  readonly where: string;
}

/** Numeric ports a container declares: containerPort, hostPort, and its probes' ports. */
function declared(c: JsonObject, path: string): Declared[] {
  const out: Declared[] = [];
  const add = (v: unknown, where: string): void => {
    if (typeof v === 'number' && Number.isInteger(v)) out.push({ port: v, where });
  };
  arrayOf(c.ports).forEach((p, i) => {
    if (!isObject(p)) return;
    add(p.containerPort, `${path}.ports[${i}].containerPort`);
    add(p.hostPort, `${path}.ports[${i}].hostPort`);
  });
  for (const probe of ['livenessProbe', 'readinessProbe', 'startupProbe']) {
    const pr = c[probe];
    if (!isObject(pr)) continue;
    for (const kind of ['httpGet', 'tcpSocket', 'grpc']) {
      const h = pr[kind];
      if (isObject(h)) add(h.port, `${path}.${probe}.${kind}.port`);
    }
  }
  return out;
}

export const reservedPorts: Rule = {
  id: 'reserved-ports',
  scope: 'smcr',
  when: 'never: it warns when a container declares a port (containerPort, hostPort, a probe) inside a range that capable nodes reserve in every network namespace for eRDMA (labels `smcr.erdma.io/erdma-reserved-ports`, `smc-reserved-ports`)',
  fix: 'use another port, or change the module parameter the warning names on those nodes',
  example: 'examples/reserved-ports/listener.yaml',
  check: (ctx) => {
    const ranges = [...ctx.view.nodes.reservedPorts].flatMap(([key, nodes]) => {
      const [label = '', value = ''] = key.split('=');
      const m = /^(\d+)-(\d+)$/.exec(value);
      return m ? [{ label, low: Number(m[1]), high: Number(m[2]), value, nodes }] : [];
    });
    if (ranges.length === 0) return none();
    const out = none();
    for (const kind of ['initContainers', 'containers'] as const)
      arrayOf(ctx.loc.spec[kind]).forEach((c, i) => {
        if (!isObject(c)) return;
        for (const d of declared(c, `${ctx.loc.prefix}spec.${kind}[${i}]`))
          for (const r of ranges)
            if (d.port >= r.low && d.port <= r.high)
              out.warnings.push(
                `${d.where} is ${d.port}, inside ${r.value}, which ${r.nodes} node(s) reserve in every network namespace: ${SETTING[r.label] ?? r.label}. The pod cannot listen on it there; use another port`,
              );
      });
    return out;
  },
};
