// Registration with the kubelet (deviceplugin/v1beta1 Registration.Register on kubelet.sock), the
// backoff between failed attempts, and the kubelet socket's identity, by which ./plugin.ts tells a
// restarted kubelet that needs registering again.
import { statSync } from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import { API_VERSION, devicePluginApi } from './api.js';

/**
 * Kubelet socket identity: a restarted kubelet recreates it. Inode and birth time, not ctime (which
 * changes when the socket is merely chmod-ed). A reused inode can hide a restart; the kubelet then
 * also removes our socket at start, which tick() notices on its own.
 */
export function sockId(path: string): string {
  try {
    const s = statSync(path);
    return `${s.ino}:${s.birthtimeMs}`;
  } catch {
    return '';
  }
}
/** Waits between failed registrations: 0.5 s, doubled after each failure up to 30 s. */
export class Backoff {
  private delayMs = 500;
  private nextAt = 0;

  /** Whether the wait after the last failure is over. */
  due(now = Date.now()): boolean {
    return now >= this.nextAt;
  }

  /** A failure: returns how long to wait before the next attempt. */
  failed(now = Date.now()): number {
    const wait = this.delayMs;
    this.nextAt = now + wait;
    this.delayMs = Math.min(this.delayMs * 2, 30_000);
    return wait;
  }

  reset(): void {
    this.delayMs = 500;
    this.nextAt = 0;
  }
}

export interface RegisterRequest {
  /** Our socket's file name in the kubelet's device-plugins directory. */
  readonly endpoint: string;
  readonly resourceName: string;
}

/** One Register call, within 5 s; rejects with the kubelet's (or the connection's) error. */
export async function register(kubeletSocket: string, req: RegisterRequest): Promise<void> {
  const Client = devicePluginApi().Registration;
  const client = new Client(`unix:${kubeletSocket}`, grpc.credentials.createInsecure());
  try {
    await new Promise<void>((resolve, reject) =>
      (
        client as unknown as {
          Register: (
            req: unknown,
            opts: { deadline: number },
            cb: (e: Error | null) => void,
          ) => void;
        }
      ).Register(
        {
          version: API_VERSION,
          endpoint: req.endpoint,
          resource_name: req.resourceName,
          options: { pre_start_required: false, get_preferred_allocation_available: true },
        },
        { deadline: Date.now() + 5000 },
        (err) => (err ? reject(err) : resolve()),
      ),
    );
  } finally {
    client.close();
  }
}
