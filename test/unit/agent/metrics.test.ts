// What each node process exports: the device plugin its own registration gauge, never the agent's
// gauges, which read 0 in a process that never sets them and fired ErdmaSmcrNodeNotCapable and
// ErdmaSmcrCniNotChained for every device plugin pod (found by the in-cluster Prometheus test).
import { describe, expect, it } from 'vitest';
import { AgentMetrics, DevicePluginMetrics } from '../../../src/agent/metrics.js';

describe('the device plugin process metrics', () => {
  it("say per resource whether it is registered, and carry none of the agent's series", async () => {
    const plugins = [
      { resourceName: 'aliyun/erdma', isRegistered: true },
      { resourceName: 'rdma/hca', isRegistered: false },
    ];
    const text = await new DevicePluginMetrics(() => plugins).registry.metrics();
    expect(text).toMatch(/^erdma_smcr_device_plugin_registered\{resource="aliyun\/erdma"\} 1$/m);
    expect(text).toMatch(/^erdma_smcr_device_plugin_registered\{resource="rdma\/hca"\} 0$/m);
    expect(text).toMatch(/^process_resident_memory_bytes /m);
    expect(text).not.toMatch(/^erdma_smcr_agent_/m);
    plugins[1] = { resourceName: 'rdma/hca', isRegistered: true };
    expect(await new DevicePluginMetrics(() => plugins).registry.metrics()).toMatch(
      /resource="rdma\/hca"\} 1$/m,
    );
  });

  it("while the agent's registry holds the gauges its alerts read", async () => {
    const text = await new AgentMetrics({ defaultMetrics: false }).registry.metrics();
    expect(text).toMatch(/^erdma_smcr_agent_node_capable 0$/m);
    expect(text).toMatch(/^erdma_smcr_agent_cni_chained 0$/m);
  });
});
