// A test kubelet. Nothing real can run a kubelet in this suite (the cluster suite runs the real
// one), so this is a hand-written stand-in that follows the upstream device manager protocol
// exactly: it serves Registration on <dir>/device-plugins/kubelet.sock, and on Register dials the
// plugin's endpoint, calls GetDevicePluginOptions, then opens ListAndWatch and keeps its updates.
// It loads the API from the .proto text with proto-loader (./device-plugin-proto.ts), not with
// the device plugin's own codecs.
import { existsSync, mkdirSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { protoLoaderApi } from './device-plugin-proto.js';

export interface DeviceMsg {
  ID: string;
  health: string;
  topology?: { nodes: { ID: number }[] } | null;
}

export interface Registration {
  version: string;
  endpoint: string;
  resource_name: string;
  options: { get_preferred_allocation_available: boolean } | null;
}

type Client = grpc.Client & Record<string, (...args: unknown[]) => unknown>;

export class FakeKubelet {
  readonly registrations: Registration[] = [];
  readonly updates: DeviceMsg[][] = [];
  readonly errors: string[] = [];
  private server: grpc.Server | undefined;
  private client: Client | undefined;
  private stream: grpc.ClientReadableStream<unknown> | undefined;

  constructor(private readonly kubeletDir: string) {}

  get socket(): string {
    return join(this.kubeletDir, 'device-plugins', 'kubelet.sock');
  }

  async start(): Promise<void> {
    mkdirSync(join(this.kubeletDir, 'device-plugins'), { recursive: true });
    if (existsSync(this.socket)) unlinkSync(this.socket);
    const server = new grpc.Server();
    server.addService(protoLoaderApi().Registration.service, {
      Register: (call: { request: Registration }, cb: (e: null, r: unknown) => void) => {
        this.registrations.push(call.request);
        cb(null, {});
        // The kubelet connects back after answering.
        setImmediate(() =>
          this.connect(call.request.endpoint).catch((err: Error) => this.errors.push(err.message)),
        );
      },
    });
    await new Promise<void>((res, rej) =>
      server.bindAsync(`unix://${this.socket}`, grpc.ServerCredentials.createInsecure(), (e) =>
        e ? rej(e) : res(),
      ),
    );
    this.server = server;
  }

  private async connect(endpoint: string): Promise<void> {
    this.stream?.cancel();
    this.client?.close();
    const Ctor = protoLoaderApi().DevicePlugin;
    const client = new Ctor(
      `unix://${join(this.kubeletDir, 'device-plugins', endpoint)}`,
      grpc.credentials.createInsecure(),
    ) as unknown as Client;
    this.client = client;
    await this.unary('GetDevicePluginOptions', {});
    const stream = (
      client.ListAndWatch as (req: unknown) => grpc.ClientReadableStream<{ devices: DeviceMsg[] }>
    )({});
    stream.on('data', (m: { devices: DeviceMsg[] }) => this.updates.push(m.devices));
    stream.on('error', () => undefined);
    this.stream = stream;
  }

  unary<T>(method: string, req: unknown): Promise<T> {
    const client = this.client;
    if (!client) return Promise.reject(new Error('no plugin connected'));
    return new Promise((resolve, reject) =>
      (client[method] as (r: unknown, cb: (e: Error | null, res: T) => void) => void).call(
        client,
        req,
        (e, res) => (e ? reject(e) : resolve(res)),
      ),
    );
  }

  /** Stops like a dying kubelet: the socket goes away. */
  async stop(): Promise<void> {
    this.stream?.cancel();
    this.client?.close();
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((res) => server.tryShutdown(() => res()));
    if (existsSync(this.socket)) unlinkSync(this.socket);
  }
}
