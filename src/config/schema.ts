// The one schema for all configuration (defaults, file, env, flags meet here), validated by zod.
import '../util/zod.js';
import * as z from 'zod/mini';
import { ERDMA_RESOURCE, IMAGE, LOG_LEVELS } from '../constants.js';

const port = z.number().check(z.int(), z.gte(0), z.lte(65535));

export const tuningSchema = z.strictObject({
  wmem: z.optional(z.number().check(z.int())),
  rmem: z.optional(z.number().check(z.int())),
  autocorkingSize: z.optional(z.number().check(z.int())),
  bufType: z.optional(z.number().check(z.int())),
  testlinkTime: z.optional(z.number().check(z.int())),
});

export const policySchema = z.strictObject({
  /** Extended resource injected into the pod. */
  resourceName: z._default(z.string().check(z.minLength(1)), ERDMA_RESOURCE),
  /** Add the eRDMA resource when no container asks for it. */
  injectResource: z._default(z.boolean(), true),
  /** Which containers get the resource: the first one, or every one. */
  resourceContainer: z._default(z.enum(['first', 'all']), 'first'),
  /** Require the agent's capable label through required node affinity. */
  injectNodeAffinity: z._default(z.boolean(), true),
  /** Turn IPv6 off in the pod netns unless the pod keeps it (SMC-R carries IPv4 only). */
  disableIPv6: z._default(z.boolean(), true),
  /** Cluster-wide tuning defaults, overridden per pod by the tuning annotations. */
  defaultTuning: z.prefault(tuningSchema, {}),
  /**
   * RDMA resources pods may ask for (besides resourceName): RDMA-aware rules apply to pods
   * that get one. rdma/hca is the shared resource of Lingjun and SCC nodes.
   */
  rdmaResources: z._default(z.array(z.string().check(z.minLength(1))), ['rdma/hca']),
  /** The shared HCA resource that needs hostNetwork unless the cluster enables RDMA for other pods. */
  hcaResource: z._default(z.string().check(z.minLength(1)), 'rdma/hca'),
  /**
   * The image of the init container that pods bound to nodes with AF_SMC only get: it copies the
   * preload library into an emptyDir their containers mount read-only and name in LD_PRELOAD.
   * Our own image, as the manifests name it; set it where the image is mirrored.
   */
  preloadImage: z._default(z.string().check(z.minLength(1)), IMAGE),
});

export const webhookSchema = z
  .strictObject({
    host: z._default(z.string(), '127.0.0.1'),
    port: z._default(port, 8443),
    /** Serve /metrics, /healthz, /readyz on a separate plain-HTTP port. */
    metricsEnabled: z._default(z.boolean(), true),
    metricsPort: z._default(port, 8080),
    metricsHost: z._default(z.string(), '127.0.0.1'),
    certDir: z._default(z.string(), 'webhook-certs'),
    /** Generate a CA and serving certificate into certDir when absent (files mode). */
    generateCerts: z._default(z.boolean(), true),
    /**
     * files: certificates in certDir (generated for development, or mounted by cert-manager), reloaded on change.
     * secret: the webhook keeps CA and serving certificate in a Secret and the caBundle of its webhook configurations.
     */
    certSource: z._default(z.enum(['files', 'secret']), 'files'),
    secretName: z._default(z.string().check(z.minLength(1)), 'erdma-smcr-webhook-certs'),
    /** Webhook configurations whose caBundle the webhook keeps (secret mode); '' manages none of that kind. */
    mutatingWebhookConfiguration: z._default(z.string(), 'erdma-smcr'),
    validatingWebhookConfiguration: z._default(z.string(), 'erdma-smcr'),
    /** Extra DNS names or IPs in the serving certificate. */
    extraNames: z._default(z.array(z.string().check(z.minLength(1))), []),
    caValiditySeconds: z._default(z.number().check(z.int(), z.gte(10)), 3 * 365 * 24 * 3600),
    certValiditySeconds: z._default(z.number().check(z.int(), z.gte(5)), 90 * 24 * 3600),
    /** How long a new CA is in the caBundle before it signs (API servers pick up the bundle meanwhile). */
    caPromotionDelaySeconds: z._default(z.number().check(z.gte(0)), 600),
    /** How often expiry and the caBundle are re-checked (drift is repaired then). */
    certCheckIntervalSeconds: z._default(z.number().check(z.gte(0.1)), 60),
    serviceName: z._default(z.string(), 'erdma-smcr-webhook'),
    namespace: z._default(z.string(), 'erdma-smcr'),
    /** Request body limit in bytes: at least 7 MiB, because an UPDATE carries two 3 MiB objects. */
    bodyLimit: z._default(z.number().check(z.int(), z.gte(1024)), 8 * 1024 * 1024),
    shutdownGraceMs: z._default(z.number().check(z.int(), z.gte(0)), 25_000),
    /**
     * On SIGTERM, keep accepting and serving this long while /readyz fails, before the graceful
     * close: Endpoints and kube-proxy need a moment to stop sending new connections to a pod that
     * is going away, and a refused connection admits the pod unmutated (failurePolicy: Ignore).
     * Every HTTP/1.1 response from SIGTERM on says Connection: close (server.ts says why).
     */
    shutdownDelayMs: z._default(z.number().check(z.int(), z.gte(0)), 0),
    /**
     * Deadlines on both protocols. The API server gives a webhook call at most 30 s, so nothing
     * slower is a real caller: a TLS handshake and an HTTP/1.1 request's headers (or an HTTP/2
     * session's first stream) within headersTimeoutMs, a whole request body within
     * requestTimeoutMs, an idle connection closed after idleTimeoutMs.
     */
    headersTimeoutMs: z._default(z.number().check(z.int(), z.gte(100)), 10_000),
    requestTimeoutMs: z._default(z.number().check(z.int(), z.gte(100)), 30_000),
    idleTimeoutMs: z._default(z.number().check(z.int(), z.gte(100)), 65_000),
    /** Bytes that unfinished request bodies may hold in total; past it the oldest is dropped. */
    pendingBodyBytes: z._default(z.number().check(z.int(), z.gte(1024)), 16 * 1024 * 1024),
    /**
     * Open connections; past it the oldest connection that never got a full response is closed,
     * else the one idle the longest (never one with a request in flight).
     */
    maxConnections: z._default(z.number().check(z.int(), z.gte(1)), 500),
    /** Open HTTP/2 streams across all connections; past it the stream open the longest is cancelled. */
    maxStreams: z._default(z.number().check(z.int(), z.gte(1)), 256),
  })
  .check(
    z.refine((w) => w.pendingBodyBytes >= w.bodyLimit, {
      message: 'webhook.pendingBodyBytes must be at least webhook.bodyLimit',
      path: ['pendingBodyBytes'],
    }),
  );

export const clusterSchema = z.strictObject({
  /** Offline cluster profile file (YAML). Absent: the embedded default profile. */
  profile: z.optional(z.string()),
  /** NodeList file for the offline view. */
  nodes: z.optional(z.string()),
  /** offline: the profile (and node list) above; live: watch the nodes and the profile ConfigMap. */
  source: z._default(z.enum(['offline', 'live']), 'offline'),
  /** Kubeconfig file; absent: $KUBECONFIG, ~/.kube/config, then the in-cluster service account. */
  kubeconfig: z.optional(z.string()),
  /** ConfigMap (in webhook.namespace) whose profile.yaml is the live cluster profile; absent ConfigMap: the profile above. */
  configMap: z._default(z.string().check(z.minLength(1)), 'erdma-smcr-cluster'),
});

/** Which RDMA devices a resource serves; every given field must match (regexes are anchored by you). */
const selectorSchema = z
  .strictObject({
    /** Kernel drivers (sysfs device/driver), e.g. erdma, mlx5_core. */
    drivers: z.optional(z.array(z.string().check(z.minLength(1))).check(z.minLength(1))),
    /** PCI vendor IDs (sysfs device/vendor), e.g. 0x1ded (Alibaba), 0x15b3 (Mellanox). */
    vendors: z.optional(
      z
        .array(z.string().check(z.regex(/^0x[0-9a-fA-F]{4}$/, 'a PCI vendor ID like 0x15b3')))
        .check(z.minLength(1)),
    ),
    /** PCI device IDs (sysfs device/device). */
    deviceIds: z.optional(
      z
        .array(z.string().check(z.regex(/^0x[0-9a-fA-F]{4}$/, 'a PCI device ID like 0x101e')))
        .check(z.minLength(1)),
    ),
    /** Regular expression on the RDMA device name (erdma_0, mlx5_1, ...). */
    rdmaDevice: z.optional(
      z.string().check(z.minLength(1), z.refine(isRegExp, 'a valid regular expression')),
    ),
    /** Regular expression on the device's network interface name. */
    netdev: z.optional(
      z.string().check(z.minLength(1), z.refine(isRegExp, 'a valid regular expression')),
    ),
  })
  .check(
    z.refine(
      (s) => Object.values(s).some((v) => v !== undefined),
      'a selector needs at least one field',
    ),
  );

const resourceSchema = z.strictObject({
  /** Extended resource name, e.g. aliyun/erdma or rdma/hca. */
  name: z
    .string()
    .check(
      z.regex(
        /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?\/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/,
        'an extended resource name like rdma/hca',
      ),
    ),
  selector: selectorSchema,
  /** exclusive: slots per device, a pod gets the devices behind its IDs; shared: `slots` identical IDs, each gets every selected device. */
  mode: z._default(z.enum(['exclusive', 'shared']), 'exclusive'),
  /** exclusive: IDs per device (default 64); shared: IDs in all (default 1000). */
  slots: z.optional(z.number().check(z.int(), z.gte(1), z.lte(100_000))),
  /** exclusive only: numa (the devices behind the IDs, NUMA-aligned) or all (every device). */
  allocation: z._default(z.enum(['numa', 'all']), 'numa'),
  /** Socket in the kubelet's device-plugins directory (default derived from the name). */
  socketName: z.optional(z.string().check(z.regex(/^[A-Za-z0-9._-]+\.sock$/))),
  /**
   * true: on a node where the selector matches nothing, the resource is served with no devices
   * (capacity 0, until one appears) instead of refusing to start: one DaemonSet for mixed nodes.
   */
  optional: z._default(z.boolean(), false),
});

export type ResourceSpec = z.infer<typeof resourceSchema>;

function isRegExp(s: string): boolean {
  try {
    new RegExp(s);
    return true;
  } catch {
    return false;
  }
}

export const agentSchema = z.strictObject({
  /** This node's name (the DaemonSet sets it from spec.nodeName); needed for labels and the pod watch. */
  nodeName: z.optional(z.string()),
  /** Root of the host filesystem as the agent sees it (/host in the DaemonSet). */
  hostRoot: z._default(z.string(), '/'),
  kubeletDir: z._default(z.string(), '/var/lib/kubelet'),
  resourceName: z._default(z.string(), ERDMA_RESOURCE),
  socketName: z._default(z.string().check(z.regex(/^[A-Za-z0-9._-]+\.sock$/)), 'erdma-smcr.sock'),
  /** Pods that may share one device: each device is advertised this many times. */
  slotsPerDevice: z._default(z.number().check(z.int(), z.gte(1), z.lte(1024)), 64),
  /** numa: a pod gets the device(s) behind its IDs, NUMA-aligned; all: every pod gets every device. */
  allocation: z._default(z.enum(['numa', 'all']), 'numa'),
  /**
   * The resources the device plugin serves, one kubelet registration each. Absent: the one
   * resource above (resourceName, slotsPerDevice, allocation) over the node's eRDMA devices.
   */
  resources: z.optional(z.array(resourceSchema).check(z.minLength(1))),
  pollMs: z._default(z.number().check(z.int(), z.gte(100)), 1000),
  /** eRDMA driver mode; auto: compat when devices are named roce*, else default. */
  driverMode: z._default(z.enum(['auto', 'default', 'compat', 'ofed']), 'auto'),
  /** Other RDMA drivers to serve too (e.g. rxe in test clusters). */
  extraDrivers: z._default(z.array(z.string()), []),
  /** Prefix of device node paths handed to kubelet ('/': /dev/infiniband/... as on any node). */
  deviceRoot: z._default(z.string(), '/'),
  /** The agent's /proc (kernel release, net.smc with hostNetwork, pod processes with hostPID). */
  procRoot: z._default(z.string(), '/proc'),
  /** Host paths (below hostRoot for the agent; as-is in the CNI config the runtime runs). */
  cniConfDir: z._default(z.string(), '/etc/cni/net.d'),
  cniBinDir: z._default(z.string(), '/opt/cni/bin'),
  cniStateDir: z._default(z.string(), '/var/lib/cni/erdma-smcr'),
  pnetIdFile: z._default(z.string(), '/run/erdma-smcr/pnetid'),
  cniLogFile: z._default(z.string(), '/var/log/erdma-smcr/cni.log'),
  /**
   * Serve a resource even while another device plugin (ACK's eRDMA controller) has it registered
   * with the kubelet: the kubelet keeps the newest registration. Off: ours waits until it is gone.
   */
  takeOverResources: z._default(z.boolean(), false),
  /** Host file where the device plugin says which resources it holds back for another registrant. */
  devicePluginStateFile: z._default(z.string(), '/run/erdma-smcr/device-plugin.json'),
  /** Host file where the agent keeps the outcome it told per pod, for the next agent process. */
  podEventsFile: z._default(z.string(), '/run/erdma-smcr/pod-events.json'),
  /** Where the preload library goes on the host (the webhook mounts it into preload pods). */
  preloadDir: z._default(z.string(), '/opt/erdma-smcr/lib'),
  /** The host's bpffs directory the IPPROTO_SMC program is pinned in (the plugin's bpfDir). */
  bpfDir: z._default(z.string(), '/sys/fs/bpf/erdma-smcr'),
  /** Our native binary (CNI plugin and pnet tool) in the image; default: native/build/erdma-smcr of this package. */
  nativeBinary: z.optional(z.string()),
  /** The DRA driver (`erdma-smcr dra-plugin`): where the runtime reads CDI specs (containerd's cdi_spec_dirs). */
  cdiDir: z._default(z.string(), '/var/run/cdi'),
  /** How often the DRA driver reads its Node and ResourceSlice again when its devices did not change. */
  sliceResyncMs: z._default(z.number().check(z.int(), z.gte(1000)), 300_000),
  /**
   * Duties, each can be switched off. devicePlugin: serve the kubelet device plugin inside the agent too. Off, as every manifest and the chart
   * ship it: the device plugin runs as its own DaemonSet (`erdma-smcr device-plugin`), so that an
   * agent upgrade never takes the device away from the kubelet.
   */
  devicePlugin: z._default(z.boolean(), false),
  nodeLabels: z._default(z.boolean(), true),
  hostPnet: z._default(z.boolean(), true),
  cniInstall: z._default(z.boolean(), true),
  podEvents: z._default(z.boolean(), true),
  /** Apply SMC-R to running pods the plugin missed (needs hostPID). */
  lateApply: z._default(z.boolean(), true),
  /**
   * Configure secondary eRDMA ENIs from the ECS instance metadata (address, routes at metric
   * 200+, MTU), as the platform's eRDMA controller does. Off by default: on ACK that controller
   * (or Terway) owns the ENIs; turn it on for self-managed clusters.
   */
  manageEni: z._default(z.boolean(), false),
  /**
   * Publish the vSwitch CIDRs of the node's secondary ENIs, from the ECS instance metadata, on the
   * Node (annotation smcr.erdma.io/pod-networks): the SMC selection's pod networks on Terway
   * clusters, whose Nodes have no podCIDRs (#100). auto: on ECS instances (the host's DMI vendor).
   */
  podNetworks: z._default(z.enum(['auto', 'on', 'off']), 'auto'),
  /**
   * On nodes whose kernel turns TCP into SMC with Alibaba's tcp2smc knob (Alibaba Cloud Linux 3),
   * which converts every TCP socket of a pod's netns and so cannot keep its SMC selection: give pods
   * the preload library there instead (`preload`, the default, where AF_SMC works: label
   * smcr.erdma.io/mechanism=preload; statically linked programs then stay on TCP), or keep the knob
   * (`tcp2smc`). A pod annotated smcr.erdma.io/mechanism: tcp2smc keeps the knob either way (#100).
   */
  tcp2smcNodes: z._default(z.enum(['preload', 'tcp2smc']), 'preload'),
  /** The ECS instance metadata service. */
  metadataUrl: z._default(z.url(), 'http://100.100.100.200'),
  /** Each metadata request's time limit, and how many times a failed one is tried again (with doubling back-off). */
  metadataTimeoutMs: z._default(z.number().check(z.int(), z.gte(50)), 2000),
  metadataRetries: z._default(z.number().check(z.int(), z.gte(0), z.lte(10)), 3),
  /**
   * Keep the eRDMA driver in `preferDriver` mode and load the modules that mode needs (smc;
   * nvidia_peermem on GPU nodes in ofed mode). Off by default: on ACK the platform's eRDMA
   * controller does this.
   */
  manageDriver: z._default(z.boolean(), false),
  /** auto: ofed on nodes with NVIDIA GPUs, else default. */
  preferDriver: z._default(z.enum(['auto', 'default', 'compat', 'ofed']), 'auto'),
  /** The host's modprobe as a command line; default: `chroot <hostRoot> modprobe` (`modprobe` when hostRoot is /). */
  modprobe: z.optional(z.array(z.string().check(z.minLength(1))).check(z.minLength(1))),
  /** MTU for configured ENIs: auto copies the primary ENI's when it is a jumbo MTU (the instance has jumbo frames), else leaves it. */
  eniMtu: z._default(
    z.union([z.literal('auto'), z.number().check(z.int(), z.gte(68), z.lte(65535))]),
    'auto',
  ),
  /** How often each SMC-R pod's connections are read from the kernel (smc_diag) for metrics and SMCRFallback Events; 0: never. */
  smcSampleMs: z._default(z.number().check(z.int(), z.gte(0)), 30_000),
  /** At most one SMCRFallback Event per pod and reason in this time. */
  fallbackEventMs: z._default(z.number().check(z.int(), z.gte(0)), 3_600_000),
  /** How often capability, labels and host pnet are re-checked. */
  refreshMs: z._default(z.number().check(z.int(), z.gte(100)), 30_000),
  /** How long a started SMC-R pod may lack a plugin record before it counts as missed. */
  podGraceMs: z._default(z.number().check(z.int(), z.gte(0)), 15_000),
  metricsEnabled: z._default(z.boolean(), true),
  metricsHost: z._default(z.string(), '0.0.0.0'),
  metricsPort: z._default(port, 9809),
});

export const configSchema = z.strictObject({
  logLevel: z._default(z.enum(LOG_LEVELS), 'info'),
  policy: z.prefault(policySchema, {}),
  webhook: z.prefault(webhookSchema, {}),
  cluster: z.prefault(clusterSchema, {}),
  agent: z.prefault(agentSchema, {}),
});

export type Config = z.infer<typeof configSchema>;
export type PolicyConfig = z.infer<typeof policySchema>;
export type TuningConfig = z.infer<typeof tuningSchema>;
export type AgentConfig = z.infer<typeof agentSchema>;
