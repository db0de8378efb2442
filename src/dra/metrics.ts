// The DRA driver process's own Prometheus metrics (`erdma-smcr dra-plugin`).
import { Gauge, Registry, collectDaemonDefaultMetrics } from '../util/prom.js';

/** The DRA driver's /metrics: registration, prepared claims, slice writes. */
export class DraPluginMetrics {
  readonly registry = new Registry();

  constructor(
    state: () => {
      registered: boolean;
      prepared: number;
      sliceWrites: number;
      sliceProblem: boolean;
    },
  ) {
    collectDaemonDefaultMetrics(this.registry);
    const gauge = (name: string, help: string, value: () => number): void => {
      new Gauge({
        name,
        help,
        registers: [this.registry],
        collect() {
          this.set(value());
        },
      });
    };
    gauge(
      'erdma_smcr_dra_registered',
      '1 when the DRA driver is registered with the kubelet.',
      () => (state().registered ? 1 : 0),
    );
    gauge(
      'erdma_smcr_dra_prepared_claims',
      'ResourceClaims prepared on this node (its checkpoint).',
      () => state().prepared,
    );
    gauge(
      'erdma_smcr_dra_slice_writes',
      'ResourceSlice creates and updates by this process (it writes only when something changed).',
      () => state().sliceWrites,
    );
    gauge(
      'erdma_smcr_dra_slice_failing',
      '1 while the last attempt to publish the ResourceSlice failed.',
      () => (state().sliceProblem ? 1 : 0),
    );
  }
}
