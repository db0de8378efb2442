// Our copy of the kubelet device plugin API for grpc-js: proto/deviceplugin/v1beta1/api.proto,
// loaded from its JSON descriptor (../kubelet/grpc-api.ts).
import type * as grpc from '@grpc/grpc-js';
import { grpcServices } from '../kubelet/grpc-api.js';

const PACKAGE = 'v1beta1';

export interface DevicePluginApi {
  readonly Registration: grpc.ServiceClientConstructor;
  readonly DevicePlugin: grpc.ServiceClientConstructor;
}

let cached: DevicePluginApi | undefined;

export function devicePluginApi(): DevicePluginApi {
  cached ??= grpcServices(['deviceplugin', 'v1beta1'], PACKAGE, ['Registration', 'DevicePlugin']);
  return cached;
}

export const API_VERSION = PACKAGE;
