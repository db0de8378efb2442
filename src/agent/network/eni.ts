// Secondary eRDMA ENIs, configured from the ECS instance metadata as the platform's eRDMA
// controller does: link up, the ENI's primary address without the kernel's prefix route, a route
// to the vSwitch CIDR and a default route through the vSwitch gateway, each at metric 200 or one
// above the highest metric already present for that destination (so a second ENI gets 201), and
// the jumbo MTU when the instance uses one. A link that is up with an address is never touched
// (that would cut live traffic); when its address is not the metadata's, that is reported: another
// network agent may own it. The netlink work is the native binary's (`net show|configure`), which
// undoes its own steps when one fails. The metadata is read by ./ecs-metadata.ts.
import type { Logger } from 'pino';
import type { NativeBinary } from '../../native/binary.js';
import type { NetConfigure, NetLink, NetRoute, NetState } from '../../native/contract.js';
import type { RdmaDevice } from '../../devices/discovery.js';
import type { EniMeta, MetadataClient } from './ecs-metadata.js';

/** Metric the platform gives eRDMA ENI routes, below NICs in the same CIDR (platform docs). */
export const ENI_BASE_METRIC = 200;
/** The MTU of Alibaba Cloud's jumbo frames. */
export const JUMBO_MTU = 8500;

// ---- IPv4 helpers ----

function ipToInt(ip: string): number | undefined {
  const parts = ip.split('.');
  if (parts.length !== 4 || !parts.every((p) => /^\d{1,3}$/.test(p) && Number(p) <= 255))
    return undefined;
  return parts.reduce((acc, p) => acc * 256 + Number(p), 0);
}

/** `a.b.c.d/len` → its network (normalised) and length; undefined when invalid. */
export function parseCidr(cidr: string): { network: string; prefix: number } | undefined {
  const m = /^(\d+\.\d+\.\d+\.\d+)\/(\d{1,2})$/.exec(cidr.trim());
  const base = m ? ipToInt(m[1] ?? '') : undefined;
  const prefix = Number(m?.[2]);
  if (base === undefined || !(prefix >= 0 && prefix <= 32)) return undefined;
  const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
  const net = (base & mask) >>> 0;
  return { network: [24, 16, 8, 0].map((s) => (net >>> s) & 255).join('.'), prefix };
}

function inCidr(ip: string, cidr: { network: string; prefix: number }): boolean {
  const a = ipToInt(ip);
  const n = ipToInt(cidr.network);
  if (a === undefined || n === undefined) return false;
  const mask = cidr.prefix === 0 ? 0 : (0xffffffff << (32 - cidr.prefix)) >>> 0;
  return (a & mask) >>> 0 === n;
}

const isLinkLocal = (ip: string): boolean => ip.startsWith('169.254.');

// ---- planning (pure) ----

export type EniStatus = 'primary' | 'configured' | 'already-configured' | 'foreign' | 'failed';

export type EniPlan =
  | {
      readonly status: 'primary' | 'already-configured';
      readonly dev: string;
      readonly detail: string;
    }
  | { readonly status: 'foreign' | 'failed'; readonly dev: string; readonly detail: string }
  | {
      readonly status: 'configure';
      readonly dev: string;
      readonly detail: string;
      readonly conf: NetConfigure;
    };

/** Metric for a new route to `dst`: the base, or one above the highest already there. */
export function metricFor(routes: readonly NetRoute[], dst: string): number {
  const highest = routes.filter((r) => r.dst === dst).reduce((m, r) => Math.max(m, r.metric), -1);
  return Math.max(ENI_BASE_METRIC, highest + 1);
}

/** The MTU to give an ENI: `auto` follows the primary ENI when it runs jumbo frames. */
export function mtuFor(policy: 'auto' | number, primary: NetLink | undefined): number {
  if (policy !== 'auto') return policy;
  return primary && primary.mtu >= JUMBO_MTU ? JUMBO_MTU : 0;
}

export function planEni(
  state: NetState,
  mac: string,
  primaryMac: string,
  meta: EniMeta | undefined,
  mtuPolicy: 'auto' | number,
): EniPlan {
  const link = state.links.find((l) => l.mac?.toLowerCase() === mac.toLowerCase());
  if (!link)
    return {
      status: 'failed',
      dev: '',
      detail: `no network interface with MAC ${mac} in the node's network namespace`,
    };
  const dev = link.name;
  if (mac.toLowerCase() === primaryMac)
    return { status: 'primary', dev, detail: 'the primary ENI: configured by the instance itself' };
  const own = state.addrs.filter(
    (a) => a.index === link.index && a.scope === 0 && !isLinkLocal(a.addr),
  );
  if (link.up && own.length > 0) {
    if (meta && !own.some((a) => a.addr === meta.address)) {
      const has = own.map((a) => `${a.addr}/${a.prefix}`).join(', ');
      return {
        status: 'foreign',
        dev,
        detail: `${dev} is up with ${has}, not the metadata's ${meta.address}: another network agent may own it; left alone`,
      };
    }
    return {
      status: 'already-configured',
      dev,
      detail: `${dev} is up with ${own.map((a) => a.addr).join(', ')}`,
    };
  }
  if (!meta)
    return { status: 'failed', dev, detail: `the instance metadata does not know MAC ${mac}` };
  const cidr = parseCidr(meta.cidr);
  if (
    !cidr ||
    ipToInt(meta.address) === undefined ||
    !inCidr(meta.address, cidr) ||
    !inCidr(meta.gateway, cidr)
  ) {
    return {
      status: 'failed',
      dev,
      detail: `the instance metadata for ${mac} is inconsistent: address ${meta.address}, vSwitch ${meta.cidr}, gateway ${meta.gateway}`,
    };
  }
  const primary = state.links.find((l) => l.mac?.toLowerCase() === primaryMac);
  const conf: NetConfigure = {
    dev,
    address: meta.address,
    prefix: cidr.prefix,
    cidr: `${cidr.network}/${cidr.prefix}`,
    gateway: meta.gateway,
    metricSubnet: metricFor(state.routes, `${cidr.network}/${cidr.prefix}`),
    metricDefault: metricFor(state.routes, '0.0.0.0/0'),
    mtu: mtuFor(mtuPolicy, primary),
  };
  return {
    status: 'configure',
    dev,
    detail: `configure ${dev} as ${meta.address}/${cidr.prefix}`,
    conf,
  };
}

// ---- the pass ----

export interface EniResult {
  readonly device: string;
  readonly mac: string;
  readonly dev: string;
  readonly status: EniStatus;
  readonly detail: string;
}

export interface EniPassOptions {
  readonly binary: NativeBinary;
  readonly metadata: MetadataClient;
  readonly mtu: 'auto' | number;
  readonly logger: Logger;
}

/**
 * One pass over the node's eRDMA devices: each secondary ENI is configured once and left alone
 * after. ENIs are done one at a time, each planned on the network as the previous left it (so the
 * second gets metric 201). A metadata service that does not answer fails the pass for every ENI
 * that still needs it, and changes nothing.
 */
export async function reconcileEnis(
  devices: readonly RdmaDevice[],
  o: EniPassOptions,
): Promise<EniResult[]> {
  const withMac = devices.filter((d) => d.mac !== '');
  if (withMac.length === 0) return [];
  const results: EniResult[] = [];
  const fail = (d: RdmaDevice, dev: string, detail: string): void =>
    void results.push({ device: d.name, mac: d.mac, dev, status: 'failed', detail });
  let primaryMac: string;
  try {
    primaryMac = await o.metadata.primaryMac();
  } catch (err) {
    for (const d of withMac) fail(d, d.netdev, (err as Error).message);
    return results;
  }
  for (const d of withMac) {
    try {
      const before = await o.binary.netShow();
      const needsMeta = d.mac.toLowerCase() !== primaryMac;
      const meta = needsMeta ? await o.metadata.eni(d.mac) : undefined;
      const plan = planEni(before, d.mac, primaryMac, meta, o.mtu);
      if (plan.status !== 'configure') {
        results.push({
          device: d.name,
          mac: d.mac,
          dev: plan.dev,
          status: plan.status,
          detail: plan.detail,
        });
        continue;
      }
      const done = await o.binary.netConfigure(plan.conf);
      if (done === 'configured') {
        o.logger.info({ device: d.name, ...plan.conf }, 'eRDMA ENI configured');
        results.push({
          device: d.name,
          mac: d.mac,
          dev: plan.dev,
          status: 'configured',
          detail: `${plan.conf.address}/${plan.conf.prefix}, metrics ${plan.conf.metricSubnet}/${plan.conf.metricDefault}`,
        });
      } else {
        results.push({
          device: d.name,
          mac: d.mac,
          dev: plan.dev,
          status: 'already-configured',
          detail: `${plan.dev} was configured meanwhile by someone else`,
        });
      }
    } catch (err) {
      fail(d, d.netdev, (err as Error).message);
    }
  }
  for (const r of results)
    if (r.status === 'failed' || r.status === 'foreign')
      o.logger.warn({ device: r.device, dev: r.dev, status: r.status }, r.detail);
  return results;
}

/** Why the node cannot use its eRDMA ENIs, or undefined when every one is usable. */
export function eniProblem(results: readonly EniResult[]): string | undefined {
  const failed = results
    .filter((r) => r.status === 'failed')
    .map((r) => `${r.device}${r.dev ? ` (${r.dev})` : ''}: ${r.detail}`);
  return failed.length > 0 ? failed.join('; ') : undefined;
}
