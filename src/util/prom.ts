// prom-client's metric types and registry, each loaded from its own module: the package's index
// also loads Summary, Pushgateway (with its HTTP client) and the cluster aggregator, none of which
// we use, and a bundle cannot leave out the parts of a CommonJS index (#43).
import Counter from 'prom-client/lib/counter.js';
import collectDefaultMetrics from 'prom-client/lib/defaultMetrics.js';
import Gauge from 'prom-client/lib/gauge.js';
import Histogram from 'prom-client/lib/histogram.js';
import Registry from 'prom-client/lib/registry.js';

export { collectDefaultMetrics, Counter, Gauge, Histogram, Registry };

/**
 * How often the node daemons (the agent, the device plugin) sample their event loop for the
 * `nodejs_eventloop_lag_*` histogram, in ms. prom-client's default, 10 ms, wakes an idle process
 * 100 times a second: 0.7% of a core on the bench machine, more than the agent's whole idle budget
 * (#43: ≤ 0.5%), on every node. At 100 ms it costs about 0.1%. The histogram records the time
 * between samples, so at rest its figures read about 0.1 s there (0.01 s in the webhook, which
 * keeps prom-client's default): the delay is what they show above that.
 */
export const DAEMON_EVENT_LOOP_SAMPLE_MS = 100;

/** prom-client's process and Node.js metrics, sampled as a node daemon's should be. */
export function collectDaemonDefaultMetrics(register: Registry): void {
  collectDefaultMetrics({ register, eventLoopMonitoringPrecision: DAEMON_EVENT_LOOP_SAMPLE_MS });
}
