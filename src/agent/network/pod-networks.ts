// The node's pod networks the Node object does not show (#100): on Terway clusters pods take their
// addresses from the vSwitches of the node's secondary ENIs, and the Node has no podCIDRs. The ECS
// metadata service says each ENI's vSwitch CIDR; the agent publishes them on its Node
// (NODE_ANNOTATIONS.podNetworks), where the webhook's node watch reads them into the SMC
// selection's networks (src/cluster/view.ts). The primary ENI's vSwitch is the nodes' own, not the
// pods': it is left out. Never holds the agent's readiness: a node where the service does not
// answer publishes nothing, and says so in the log once per reason.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { NODE_ANNOTATIONS } from '../../constants.js';
import { canonicalCidr } from '../../policy/selection.js';
import type { Duty } from '../duty.js';
import type { NodeLabeler } from '../node/labels.js';
import { MetadataClient, type MetadataOptions } from './ecs-metadata.js';

/** How often the ENIs are read again (Terway attaches and detaches ENIs as pods come and go). */
export const POD_NETWORKS_MS = 60_000;

/**
 * Whether this host is an ECS instance (agent.podNetworks `auto`): its DMI vendor, under the
 * agent's view of the host (hostRoot), says Alibaba Cloud. Elsewhere the metadata address is
 * nobody's, and is never asked.
 */
export function onEcs(hostRoot: string): boolean {
  try {
    return /Alibaba Cloud/i.test(
      readFileSync(join(hostRoot, 'sys/class/dmi/id/sys_vendor'), 'utf8'),
    );
  } catch {
    return false;
  }
}

/** The vSwitch CIDRs of the instance's secondary ENIs, IPv4, canonical, each once, sorted. */
export async function secondaryVswitchCidrs(client: MetadataClient): Promise<string[]> {
  const primary = await client.primaryMac();
  const secondary = (await client.macs()).filter((m) => m !== primary);
  const cidrs = await Promise.all(secondary.map((m) => client.vswitchCidr(m)));
  return [...new Set(cidrs.flatMap((c) => (c ? (canonicalCidr(c) ?? []) : [])))].sort();
}

export class PodNetworksDuty implements Duty {
  readonly name = 'pod-networks';
  private client: MetadataClient | undefined;
  private lastProblem = '';
  /** What the last pass published (empty: none). */
  published: readonly string[] = [];

  constructor(
    private readonly o: {
      readonly metadata: MetadataOptions;
      readonly labeler: NodeLabeler | undefined;
      readonly logger: Logger;
    },
  ) {}

  problem(): undefined {
    return undefined;
  }

  async pass(): Promise<void> {
    if (!this.o.labeler) return;
    this.client ??= new MetadataClient(this.o.metadata);
    let cidrs: string[];
    try {
      cidrs = await secondaryVswitchCidrs(this.client);
    } catch (err) {
      const reason = (err as Error).message;
      if (reason !== this.lastProblem)
        this.o.logger.warn(
          { reason },
          'cannot read the ENIs from the instance metadata: the pod networks are not published (the webhook uses the podCIDRs, ServiceCIDRs and its profile)',
        );
      this.lastProblem = reason;
      return;
    }
    this.lastProblem = '';
    await this.o.labeler.annotate({
      [NODE_ANNOTATIONS.podNetworks]: cidrs.length > 0 ? cidrs.join(',') : null,
    });
    this.published = cidrs;
  }
}
