// Writes proto/deviceplugin/v1beta1/api.json: the JSON descriptor of api.proto beside it, which the
// device plugin loads with protobufjs's light build (src/agent/deviceplugin/api.ts), so that no
// process parses .proto text at start. Field names stay as the .proto spells them. Run it after
// changing api.proto; test/unit/agent/deviceplugin-api.test.ts fails while the two differ.
// Usage: node scripts/proto-json.mjs
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

export const API_PROTO = 'proto/deviceplugin/v1beta1/api.proto';
export const API_JSON = 'proto/deviceplugin/v1beta1/api.json';

/** The descriptor of a .proto file as the JSON text written beside it. */
export function protoJson(file) {
  const { root } = protobuf.parse(readFileSync(file, 'utf8'), { keepCase: true });
  return `${JSON.stringify(root.toJSON(), null, 2)}\n`;
}

if (process.argv[1] === fileURLToPath(import.meta.url))
  writeFileSync(API_JSON, protoJson(API_PROTO));
