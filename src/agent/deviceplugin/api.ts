// Loads our copy of the kubelet device plugin API (proto/deviceplugin/v1beta1/api.proto) for grpc-js.
import { existsSync } from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { packagePath } from '../../util/package.js';

function protoPath(): string {
  const p = packagePath('proto', 'deviceplugin', 'v1beta1', 'api.proto');
  if (!existsSync(p)) throw new Error(`device plugin API definition not found at ${p}`);
  return p;
}

export interface DevicePluginApi {
  readonly Registration: grpc.ServiceClientConstructor;
  readonly DevicePlugin: grpc.ServiceClientConstructor;
}

let cached: DevicePluginApi | undefined;

export function devicePluginApi(): DevicePluginApi {
  if (!cached) {
    const def = protoLoader.loadSync(protoPath(), {
      keepCase: true,
      longs: Number,
      defaults: true,
      oneofs: true,
    });
    const pkg = grpc.loadPackageDefinition(def).v1beta1 as unknown as DevicePluginApi;
    cached = pkg;
  }
  return cached;
}

export const API_VERSION = 'v1beta1';
