// Writes each proto/**/api.json: the JSON descriptor of the api.proto beside it, which the device
// plugin and the DRA driver load with protobufjs's light build (src/kubelet/grpc-api.ts), so that no
// process parses .proto text at start. Field names stay as the .proto spells them. Run it after
// changing an api.proto; test/unit/kubelet/grpc-api.test.ts fails while the two differ.
// Usage: node scripts/proto-json.mjs
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

export const API_PROTO = 'proto/deviceplugin/v1beta1/api.proto';
export const API_JSON = 'proto/deviceplugin/v1beta1/api.json';

/** Every API of ours: [api.proto, api.json]. */
export const API_FILES = [
  [API_PROTO, API_JSON],
  ...['pluginregistration/v1', 'dra/v1', 'dra/v1beta1', 'dra-health/v1', 'dra-health/v1alpha1'].map(
    (d) => [`proto/${d}/api.proto`, `proto/${d}/api.json`],
  ),
];

/** The descriptor of a .proto file as the JSON text written beside it. */
export function protoJson(file) {
  const { root } = protobuf.parse(readFileSync(file, 'utf8'), { keepCase: true });
  return `${JSON.stringify(root.toJSON(), null, 2)}\n`;
}

if (process.argv[1] === fileURLToPath(import.meta.url))
  for (const [proto, json] of API_FILES) writeFileSync(json, protoJson(proto));
