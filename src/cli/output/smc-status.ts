// `erdma-smcr status` for people: one line per SMC-R pod (connections by mode, bytes, devices,
// fallback reasons), the reasons explained once, why plain TCP stayed plain, and with --pod an
// smcss-like table of its connections. The data is the agent's (agent/observe/smc.ts).
import { describeReason, selectionNotEnforced, type PodSmc } from '../../agent/observe/smc.js';
import { describePlainTcp } from '../../agent/observe/programs.js';
import type { SmcSocket } from '../../native/contract.js';

const pad = (s: string, n: number): string => (s.length >= n ? `${s} ` : s.padEnd(n + 1));

function fmtBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v.toFixed(1)} ${units[u]}`;
}

function podLine(p: PodSmc): string {
  const who = `${p.namespace}/${p.name}`;
  const s = p.summary;
  if (!s) return `${pad(who, 40)}not read: ${p.error ?? 'unknown'}`;
  // SMC-D has no RDMA device: on a node it is loopback-ism, shared memory within the kernel.
  const devs =
    s.devices.map((d) => `${d.dev}:${d.port}`).join(',') ||
    (s.byMode.SMCD > 0 ? 'loopback-ism' : '-');
  const reasons = Object.entries(s.fallbacks)
    .map(([code, n]) => `${describeReason(code).name}×${n}`)
    .concat(s.otherFallbacks ? [`other×${s.otherFallbacks}`] : [])
    .join(', ');
  return `${pad(who, 40)}${pad(String(s.byMode.SMCR), 6)}${pad(String(s.byMode.SMCD), 6)}${pad(String(s.byMode.TCP), 6)}${pad(fmtBytes(s.txBytes), 10)}${pad(fmtBytes(s.rxBytes), 10)}${pad(devs, 14)}${reasons || '-'}`;
}

/** Why connections of a pod stayed plain TCP, by the pod's mechanism. */
export function plainTcpWhy(mechanism: string | undefined): string {
  switch (mechanism) {
    case 'preload':
      return "programs that do not load the preload library stay on TCP: statically linked ones (Go, busybox), or a program that clears LD_PRELOAD; and a socket the library could not carry to SMC (duplicated, shared by fork, in an epoll set it did not see: the container's log says which, once per reason)";
    case 'bpf':
      return 'sockets opened before the plugin switched the pod on, or with a protocol other than TCP, stay on TCP';
    case 'tcp2smc':
      return 'sockets opened before net.smc.tcp2smc was set stay on TCP';
    default:
      return "no mechanism switched this pod to SMC (see the pod's Events and `erdma-smcr mechanisms` on the node)";
  }
}

/** Pods with plain TCP connections, and why those are not SMC. */
function plainTcpNotes(pods: readonly PodSmc[]): string[] {
  const notes = pods
    .filter((p) => (p.summary?.plainTcp ?? 0) > 0)
    .flatMap((p) => [
      `  ${p.namespace}/${p.name}: ${p.summary!.plainTcp} TCP connection(s) not on SMC (${p.mechanism ?? 'unknown'}): ${plainTcpWhy(p.mechanism)}`,
      ...(p.plainTcpPrograms ?? []).map((x) => `    ${describePlainTcp(x)}`),
    ]);
  return notes.length > 0 ? ['', 'Plain TCP:', ...notes] : [];
}

/** Pods whose node cannot keep to their SMC selection (#93): every connection of theirs is SMC. */
function notEnforcedNotes(pods: readonly PodSmc[]): string[] {
  const notes = pods
    .filter((p) => p.selection === 'none')
    .map((p) => `  ${p.namespace}/${p.name}: ${selectionNotEnforced(p.selectionWhy)}`);
  return notes.length > 0 ? ['', 'SMC selection not enforced:', ...notes] : [];
}

/** Pods whose SMC selection kept connections on TCP (#93): said apart, to tune the ports by. */
function selectionNotes(pods: readonly PodSmc[]): string[] {
  const notes = pods
    .filter((p) => (p.summary?.selectionKept ?? 0) > 0)
    .map(
      (p) =>
        `  ${p.namespace}/${p.name}: ${p.summary!.selectionKept} connection(s) kept on TCP by its SMC selection (outside the cluster's networks, or a port it does not name): smcr.erdma.io/connect-ports and listen-ports choose them`,
    );
  return notes.length > 0 ? ['', 'Kept on TCP by the selection:', ...notes] : [];
}

/** Pods with loopback connections that fell back: expected, said apart from the reasons. */
function loopbackNotes(pods: readonly PodSmc[]): string[] {
  const notes = pods
    .filter((p) => (p.summary?.loopbackFallbacks ?? 0) > 0)
    .map(
      (p) =>
        `  ${p.namespace}/${p.name}: ${p.summary!.loopbackFallbacks} connection(s) to or from 127.0.0.1 or ::1 fell back to TCP, as expected: no RDMA device serves lo (a kernel with loopback-ism makes them SMC-D)`,
    );
  return notes.length > 0 ? ['', 'Loopback:', ...notes] : [];
}

/** Each reason seen, once, with what it means. */
function legend(pods: readonly PodSmc[]): string[] {
  const seen = new Set<string>();
  for (const p of pods) for (const code of Object.keys(p.summary?.fallbacks ?? {})) seen.add(code);
  if (seen.size === 0) return [];
  return [
    '',
    'Fallback reasons:',
    ...[...seen].sort().map((code) => {
      const r = describeReason(code);
      return `  ${r.name} (${code}): ${r.meaning}`;
    }),
  ];
}

function socketDetails(s: SmcSocket): string {
  const bytes = s.conn ? ` tx ${fmtBytes(s.conn.txBytes)} rx ${fmtBytes(s.conn.rxBytes)}` : '';
  if (s.mode === 'SMCR' && s.link) return `${s.link.dev}:${s.link.port} ${s.link.role}${bytes}`;
  if (s.mode === 'SMCD') return `shared memory (SMC-D)${bytes}`;
  if (!s.fallback) return '';
  const peer =
    s.fallback.peerReason !== '0x00000000'
      ? ` (peer: ${describeReason(s.fallback.peerReason).name})`
      : '';
  return `${describeReason(s.fallback.reason).name}${peer}`;
}

/** An smcss-like table of one pod's connections. */
function socketTable(p: PodSmc): string[] {
  return [
    '',
    `${p.namespace}/${p.name}:`,
    `  ${pad('State', 14)}${pad('Local Address', 24)}${pad('Peer Address', 24)}${pad('Mode', 5)}Details`,
    ...(p.sockets ?? []).map(
      (s) =>
        `  ${pad(s.state, 14)}${pad(s.local, 24)}${pad(s.peer, 24)}${pad(s.mode, 5)}${socketDetails(s)}`,
    ),
  ];
}

/** A person's view: one line per pod, the reasons explained, then (with sockets) an smcss-like table per pod. */
export function formatStatus(pods: readonly PodSmc[]): string {
  if (pods.length === 0) return 'no SMC-R pods on this node\n';
  const lines = [
    `${pad('POD', 40)}${pad('SMC-R', 6)}${pad('SMC-D', 6)}${pad('TCP', 6)}${pad('TX', 10)}${pad('RX', 10)}${pad('DEVICE', 14)}FALLBACK REASONS`,
    ...pods.map(podLine),
    ...legend(pods),
    ...loopbackNotes(pods),
    ...notEnforcedNotes(pods),
    ...selectionNotes(pods),
    ...plainTcpNotes(pods),
    ...pods.filter((x) => x.sockets).flatMap(socketTable),
  ];
  return `${lines.join('\n')}\n`;
}
