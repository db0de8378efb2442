// The kubelet's gRPC APIs for grpc-js, read from the JSON descriptor of each of our .proto files
// (proto/**/api.json, made by scripts/proto-json.mjs) with protobufjs's light build: no process
// parses .proto text, and @grpc/proto-loader with the full protobufjs is not loaded (#43: 1.4 MB
// less resident, idle). Messages are plain objects as proto-loader made them with { keepCase,
// longs: Number, defaults, oneofs }: the fields as the .proto spells them, every field present.
import { existsSync, readFileSync } from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs/light.js';
import { packagePath } from '../util/package.js';

function descriptor(dir: readonly string[]): protobuf.INamespace {
  const p = packagePath('proto', ...dir, 'api.json');
  if (!existsSync(p)) throw new Error(`gRPC API definition not found at ${p}`);
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

/** grpc-js's definition of one service: each method's path (/package.Service/Method), streaming and codecs. */
function serviceDefinition(service: protobuf.Service): grpc.ServiceDefinition {
  const full = service.fullName.replace(/^\./, '');
  const methods = service.methodsArray.map((m) => {
    m.resolve();
    const [req, res] = [m.resolvedRequestType, m.resolvedResponseType];
    if (!req || !res) throw new Error(`${full}.${m.name}: message types not found`);
    return [
      m.name,
      {
        path: `/${full}/${m.name}`,
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

/**
 * The services of proto/<dir>/api.json in package `pkg`, as grpc-js client constructors (whose
 * `.service` is the definition a server adds).
 */
export function grpcServices<N extends string>(
  dir: readonly string[],
  pkg: string,
  names: readonly N[],
): Record<N, grpc.ServiceClientConstructor> {
  const root = protobuf.Root.fromJSON(descriptor(dir));
  return Object.fromEntries(
    names.map((name) => [
      name,
      grpc.makeGenericClientConstructor(
        serviceDefinition(root.lookupService(`${pkg}.${name}`)),
        name,
      ),
    ]),
  ) as Record<N, grpc.ServiceClientConstructor>;
}
