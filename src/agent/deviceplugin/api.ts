// Our copy of the kubelet device plugin API for grpc-js. It is read from the JSON descriptor of
// proto/deviceplugin/v1beta1/api.proto (api.json beside it, made by scripts/proto-json.mjs) with
// protobufjs's light build: no process parses .proto text, and @grpc/proto-loader with the full
// protobufjs is not loaded (#43: 1.4 MB less resident, idle). Messages are plain objects as
// proto-loader made them with { keepCase, longs: Number, defaults, oneofs }: the fields as the
// .proto spells them, every field present.
import { existsSync, readFileSync } from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs/light.js';
import { packagePath } from '../../util/package.js';

const PACKAGE = 'v1beta1';

function descriptor(): protobuf.INamespace {
  const p = packagePath('proto', 'deviceplugin', 'v1beta1', 'api.json');
  if (!existsSync(p)) throw new Error(`device plugin API definition not found at ${p}`);
  return JSON.parse(readFileSync(p, 'utf8')) as protobuf.INamespace;
}

/** How proto-loader turns a decoded message into an object (its options above). */
const TO_OBJECT: protobuf.IConversionOptions = {
  longs: Number,
  defaults: true,
  oneofs: true,
};

const serialize =
  (type: protobuf.Type) =>
  (value: object): Buffer =>
    Buffer.from(type.encode(type.fromObject(value)).finish());

const deserialize =
  (type: protobuf.Type) =>
  (bytes: Buffer): object =>
    type.toObject(type.decode(bytes), TO_OBJECT);

/** grpc-js's definition of one service: each method's path, streaming and codecs. */
function serviceDefinition(service: protobuf.Service): grpc.ServiceDefinition {
  const methods = service.methodsArray.map((m) => {
    m.resolve();
    const [req, res] = [m.resolvedRequestType, m.resolvedResponseType];
    if (!req || !res) throw new Error(`${service.fullName}.${m.name}: message types not found`);
    return [
      m.name,
      {
        path: `/${PACKAGE}.${service.name}/${m.name}`,
        requestStream: m.requestStream === true,
        responseStream: m.responseStream === true,
        requestSerialize: serialize(req),
        requestDeserialize: deserialize(req),
        responseSerialize: serialize(res),
        responseDeserialize: deserialize(res),
        // As proto-loader names it: clients get both spellings.
        originalName: m.name.charAt(0).toLowerCase() + m.name.slice(1),
      },
    ] as const;
  });
  return Object.fromEntries(methods);
}

export interface DevicePluginApi {
  readonly Registration: grpc.ServiceClientConstructor;
  readonly DevicePlugin: grpc.ServiceClientConstructor;
}

let cached: DevicePluginApi | undefined;

export function devicePluginApi(): DevicePluginApi {
  if (!cached) {
    const root = protobuf.Root.fromJSON(descriptor());
    const client = (name: string): grpc.ServiceClientConstructor =>
      grpc.makeGenericClientConstructor(
        serviceDefinition(root.lookupService(`${PACKAGE}.${name}`)),
        name,
      );
    cached = { Registration: client('Registration'), DevicePlugin: client('DevicePlugin') };
  }
  return cached;
}

export const API_VERSION = PACKAGE;
