// The device plugin process's own Prometheus metrics (`erdma-smcr device-plugin`).
import { Gauge, Registry, collectDaemonDefaultMetrics } from '../util/prom.js';

/**
 * The device plugin process's metrics (`erdma-smcr device-plugin`): its own, never the agent's,
 * whose gauges would read 0 there (node not capable, CNI not chained) and fire the agent's alerts
 * on every node.
 */
export class DevicePluginMetrics {
  readonly registry = new Registry();

  constructor(plugins: () => readonly { resourceName: string; isRegistered: boolean }[]) {
    collectDaemonDefaultMetrics(this.registry);
    new Gauge({
      name: 'erdma_smcr_device_plugin_registered',
      help: '1 when the device plugin for each resource is registered with the kubelet.',
      labelNames: ['resource'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const p of plugins()) this.set({ resource: p.resourceName }, p.isRegistered ? 1 : 0);
      },
    });
  }
}
