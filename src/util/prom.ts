// prom-client's metric types and registry, each loaded from its own module: the package's index
// also loads Summary, Pushgateway (with its HTTP client) and the cluster aggregator, none of which
// we use, and a bundle cannot leave out the parts of a CommonJS index (#43).
import Counter from 'prom-client/lib/counter.js';
import collectDefaultMetrics from 'prom-client/lib/defaultMetrics.js';
import Gauge from 'prom-client/lib/gauge.js';
import Histogram from 'prom-client/lib/histogram.js';
import Registry from 'prom-client/lib/registry.js';

export { collectDefaultMetrics, Counter, Gauge, Histogram, Registry };
