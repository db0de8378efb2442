// TCP ports Alibaba's kernels reserve in every network namespace, read from the node's own module
// parameters: the erdma driver in compat mode binds 16 kernel sockets from reserve_ports_base
// (0x7790 = 30608 by default: 30608-30623, inside the NodePort range) for eRDMA's out-of-band
// connections, and the smc module of Alibaba's kernels 16 more from rsvd_ports_base. A pod that
// listens on one of them cannot bind it. Never assumed: a node without the parameter reserves none.
import { readFileSync } from 'node:fs';
import { sysModule } from '../host.js';

/** How many ports each reserves from its base (SMC_IWARP_RSVD_PORTS_NUM, the driver's 16 sockets). */
export const RESERVED_PORT_COUNT = 16;

export interface ReservedPorts {
  /** erdma's reserve_ports_base, when the driver runs in compat mode. */
  readonly erdma?: number;
  /** smc's rsvd_ports_base (Alibaba's kernels). */
  readonly smc?: number;
}

function param(hostRoot: string, module: string, name: string): string | undefined {
  try {
    return readFileSync(sysModule(hostRoot, module, 'parameters', name), 'utf8').trim();
  } catch {
    return undefined;
  }
}

function port(v: string | undefined): number | undefined {
  if (v === undefined || !/^\d+$/.test(v)) return undefined;
  const n = Number(v);
  return n > 0 && n + RESERVED_PORT_COUNT - 1 <= 65535 ? n : undefined;
}

/** What the node's loaded modules reserve (sysfs below hostRoot). */
export function readReservedPorts(hostRoot: string): ReservedPorts {
  const compat = param(hostRoot, 'erdma', 'compat_mode');
  const erdma =
    compat === 'Y' || compat === '1'
      ? port(param(hostRoot, 'erdma', 'reserve_ports_base'))
      : undefined;
  const smc = port(param(hostRoot, 'smc', 'rsvd_ports_base'));
  return { ...(erdma ? { erdma } : {}), ...(smc ? { smc } : {}) };
}

/** `LOW-HIGH` for a base: a valid label value. */
export const portRange = (base: number): string => `${base}-${base + RESERVED_PORT_COUNT - 1}`;
