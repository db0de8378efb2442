// The kubelet device plugin API as the test side loads it: the .proto text parsed by
// @grpc/proto-loader, independently of the JSON descriptor and the codecs that the device plugin
// uses (src/deviceplugin/api.ts). A test kubelet built on this one talks to ours across two
// implementations of the wire format, as the real kubelet (Go protobuf) does in the cluster suite.
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type { DevicePluginApi } from '../../src/deviceplugin/api.js';
import { packagePath } from '../../src/util/package.js';

let cached: DevicePluginApi | undefined;

export function protoLoaderApi(): DevicePluginApi {
  cached ??= grpc.loadPackageDefinition(
    protoLoader.loadSync(packagePath('proto', 'deviceplugin', 'v1beta1', 'api.proto'), {
      keepCase: true,
      longs: Number,
      defaults: true,
      oneofs: true,
    }),
  ).v1beta1 as unknown as DevicePluginApi;
  return cached;
}
