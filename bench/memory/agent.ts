// The agent's rows of the memory bench: as its DaemonSet runs it without a cluster (idle, settled,
// idle CPU) and with the harness's real API server.
import type { ChildProcess } from 'node:child_process';
import type { BenchRow } from '../report.js';
import { stop } from '../webhook.js';
import { floorRow } from './floor.js';
import { cpuRow, IDLE_STARTS, idleCpu, moreIdleReadings, SETTLED_MS } from './idle.js';
import {
  AGENT_YAML,
  type Api,
  type DaemonSite,
  idle,
  idleRow,
  row,
  startAgent,
  status,
} from './instruments.js';

/** The agent as shipped (no device plugin) on a fixture host tree, no cluster: idle, settled, CPU. */
export async function agentRows(site: DaemonSite, base: number, on: string): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const readings = await moreIdleReadings(() => startAgent(site), IDLE_STARTS - 1);
  const agent = await startAgent(site);
  try {
    readings.push(await idle(agent));
    rows.push(
      idleRow(
        `agent as shipped (no device plugin: discovery, CNI chaining, metrics)${on}, idle`,
        readings,
        base,
      ),
    );
    // A daemon idles for days: after some seconds V8's memory reducer collects what start-up
    // left behind. Its resident set then is reported beside the 3 s figure, which stays the one
    // the target is read on; its CPU after those collections, over a window that holds its
    // periodic work.
    const cpu = await idleCpu(agent, () =>
      rows.push(
        row(
          `agent as shipped${on}, idle ${SETTLED_MS / 1000} s after start`,
          status(agent, 'VmRSS'),
          base,
          undefined,
          "after V8's idle-time collection; the target is read on the row above",
        ),
      ),
    );
    rows.push(
      cpuRow(
        `agent as shipped${on}, idle CPU`,
        cpu,
        'refreshes with the mechanism probe, SMC samples, CNI checks, metrics',
      ),
    );
  } finally {
    await stop(agent);
  }
  return rows;
}

/**
 * The agent as on a node, talking to the harness's real API server (its Node's labels, its pods'
 * watch, events over TLS), and its floor with the same watch: measured while the control plane
 * runs, which is stopped before the rows that load the machine.
 */
export async function agentLiveRows(
  site: DaemonSite,
  api: Api,
  base: number,
  on: string,
): Promise<BenchRow[]> {
  const start = (env: Record<string, string> = {}): Promise<ChildProcess> =>
    startAgent(site, { ERDMA_SMCR_NODE_NAME: api.nodeName, ...env }, api.cp.kubeconfig);
  return [
    await floorRow(site.node, 'agent', AGENT_YAML, start, base, on, api),
    idleRow(
      `agent as shipped with the API server (its Node's labels, its pods' watch, events)${on}, idle`,
      await moreIdleReadings(start, IDLE_STARTS),
      base,
    ),
  ];
}
