// One ENI pass of the agent's code, run by the ENI test inside the "node" network namespace
// (`ip netns exec`), so that both its metadata requests and the native binary's netlink work
// happen there. argv[2]: JSON {devices: [{name, mac}], binary, metadataUrl, timeoutMs, retries, mtu}.
// Prints the results as JSON.
import pino from 'pino';
import { MetadataClient } from '../../src/agent/network/ecs-metadata.js';
import { reconcileEnis } from '../../src/agent/network/eni.js';
import { NativeBinary } from '../../src/native/binary.js';
import type { RdmaDevice } from '../../src/devices/discovery.js';

const a = JSON.parse(process.argv[2] ?? '{}') as {
  devices: { name: string; mac: string }[];
  binary: string;
  metadataUrl: string;
  timeoutMs: number;
  retries: number;
  mtu: 'auto' | number;
};
const devices = a.devices.map((d) => ({ ...d, netdev: '' }) as unknown as RdmaDevice);
const metadata = new MetadataClient({
  baseUrl: a.metadataUrl,
  timeoutMs: a.timeoutMs,
  retries: a.retries,
  backoffMs: 50,
});
const results = await reconcileEnis(devices, {
  binary: new NativeBinary(a.binary),
  metadata,
  mtu: a.mtu,
  logger: pino({ level: 'silent' }),
});
process.stdout.write(`${JSON.stringify(results)}\n`);
