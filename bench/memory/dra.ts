// The DRA driver's row of the memory bench (#86 item 8): idle with the harness's real API server
// (its Node, its ResourceSlice published, its plugin sockets served), beside the device plugin's
// rows of the same run.
import type { ChildProcess } from 'node:child_process';
import type { BenchRow } from '../report.js';
import { IDLE_STARTS, moreIdleReadings } from './idle.js';
import { type Api, type DaemonSite, idleRow, startDaemon } from './instruments.js';

const DRA_YAML = 'manifests/components/dra/dra.yaml';

export async function draLiveRows(
  site: DaemonSite,
  api: Api,
  base: number,
  on: string,
): Promise<BenchRow[]> {
  const start = (): Promise<ChildProcess> =>
    startDaemon(
      site,
      'dra-plugin',
      DRA_YAML,
      { ERDMA_SMCR_NODE_NAME: api.nodeName },
      api.cp.kubeconfig,
    );
  return [
    idleRow(
      `DRA driver (its own DaemonSet: its ResourceSlice published, plugin sockets served)${on}, idle`,
      await moreIdleReadings(start, IDLE_STARTS),
      base,
    ),
  ];
}
