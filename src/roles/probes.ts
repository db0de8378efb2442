// The probe and metrics server of the three node daemons (agent, device plugin, DRA driver).
import type { AgentConfig } from '../config/schema.js';
import { listenFailure, startProbeServer, type ProbeServer, type Probes } from '../util/probes.js';

/**
 * A node daemon's probes and /metrics on agent.metricsHost:metricsPort, or none when metrics are
 * off. A port it cannot listen on is one line naming the setting (the agent's and the device
 * plugin's share it).
 */
export async function startDaemonProbes(
  a: AgentConfig,
  probes: Probes,
): Promise<ProbeServer | undefined> {
  if (!a.metricsEnabled) return undefined;
  return startProbeServer(a.metricsHost, a.metricsPort, probes).catch((err: unknown) => {
    throw listenFailure(
      err,
      `${a.metricsHost}:${a.metricsPort}`,
      'agent.metricsPort (ERDMA_SMCR_AGENT_METRICS_PORT)',
    );
  });
}
