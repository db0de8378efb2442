// What each node process exports: the device plugin its own registration gauge, never the agent's
// gauges, which read 0 in a process that never sets them and fired ErdmaSmcrNodeNotCapable and
// ErdmaSmcrCniNotChained for every device plugin pod (found by the in-cluster Prometheus test).
import { describe, expect, it } from 'vitest';
import { WebhookMetrics } from '../../../src/admission/metrics.js';
import { AgentMetrics } from '../../../src/agent/metrics.js';
import { DevicePluginMetrics } from '../../../src/deviceplugin/metrics.js';
import { DAEMON_EVENT_LOOP_SAMPLE_MS } from '../../../src/util/prom.js';

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

describe('the node daemons sample their event loop every 100 ms (#43: idle CPU)', () => {
  // prom-client's 10 ms default wakes an idle process 100 times a second (0.7% of a core measured
  // on the bench machine). Node's histogram records the time between samples, so its smallest
  // figure shows the sampling period: about 0.1 s in the daemons, 0.01 s in the webhook.
  it("and the webhook keeps prom-client's 10 ms", async () => {
    const registries = {
      agent: new AgentMetrics().registry,
      devicePlugin: new DevicePluginMetrics(() => []).registry,
      webhook: new WebhookMetrics().registry,
    };
    await new Promise((r) => setTimeout(r, 4 * DAEMON_EVENT_LOOP_SAMPLE_MS + 50));
    const min = async (r: (typeof registries)['agent']): Promise<number> => {
      const m = /^nodejs_eventloop_lag_min_seconds (\S+)$/m.exec(await r.metrics());
      if (!m) throw new Error('no nodejs_eventloop_lag_min_seconds in the registry');
      return Number(m[1]);
    };
    expect(await min(registries.agent)).toBeGreaterThan(0.09);
    expect(await min(registries.devicePlugin)).toBeGreaterThan(0.09);
    expect(await min(registries.webhook)).toBeLessThan(0.05);
  });
});
