// Runs inside the SMC-R VM: the agent's own device-counter reader (dist/agent/observe/counters.js, copied
// into /agent by build.sh) on one RDMA device, as the agent's metrics and `devices --watch` read it.
import { readDeviceCounters } from '/agent/observe/counters.js';

process.stdout.write(JSON.stringify(readDeviceCounters('/', process.argv[2])));
