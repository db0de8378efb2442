// The kubelet's plugin watcher (pluginregistration v1): a plugin serves GetInfo and
// NotifyRegistrationStatus on a socket it makes in <kubelet-dir>/plugins_registry/; the kubelet
// dials each socket that appears there, asks who it is (type, name, endpoint, the services it
// offers), and says whether it took it. A restarted kubelet asks again. The DRA driver registers
// this way (the device plugin calls the kubelet's Registration service instead: ../deviceplugin).
import { posix } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { grpcServices } from './grpc-api.js';
import { serveUnix, stopServing, type Unary } from './serve.js';

export interface PluginInfo {
  /** "DRAPlugin" for a DRA driver. */
  readonly type: string;
  readonly name: string;
  /** The socket of the plugin's own services. */
  readonly endpoint: string;
  /** The gRPC services offered there, as "<package>.<Service>", newest first. */
  readonly supportedVersions: readonly string[];
}

/** What the kubelet said of our registration. */
export interface RegistrationStatus {
  readonly registered: boolean;
  readonly error?: string;
}

export class PluginRegistration {
  private server: grpc.Server | undefined;
  readonly socket: string;

  constructor(
    kubeletDir: string,
    private readonly info: PluginInfo,
    private readonly onStatus: (s: RegistrationStatus) => void,
  ) {
    this.socket = posix.join(kubeletDir, 'plugins_registry', `${info.name}-reg.sock`);
  }

  private handlers(): grpc.UntypedServiceImplementation {
    const getInfo: Unary<unknown, object> = (_call, cb) =>
      cb(null, {
        type: this.info.type,
        name: this.info.name,
        endpoint: this.info.endpoint,
        supported_versions: [...this.info.supportedVersions],
      });
    const notify: Unary<{ plugin_registered: boolean; error: string }, object> = (call, cb) => {
      this.onStatus({
        registered: call.request.plugin_registered,
        ...(call.request.error ? { error: call.request.error } : {}),
      });
      cb(null, {});
    };
    return {
      GetInfo: getInfo,
      NotifyRegistrationStatus: notify,
    } as unknown as grpc.UntypedServiceImplementation;
  }

  /** Serves the registration socket: its appearance is what the kubelet acts on, so serve it last. */
  async start(): Promise<void> {
    const reg = grpcServices(['pluginregistration', 'v1'], 'pluginregistration', ['Registration']);
    const server = new grpc.Server();
    server.addService(reg.Registration.service, this.handlers());
    await serveUnix(server, this.socket, true);
    this.server = server;
  }

  /** Stops serving and removes the socket (first: the kubelet then stops calling the plugin). */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    await stopServing(server, this.socket);
  }
}
