// The one schema for all configuration (defaults, file, env, flags meet here), validated by zod.
import { z } from 'zod';
import { ERDMA_RESOURCE } from '../constants.js';

const port = z.number().int().min(0).max(65535);

export const tuningSchema = z
  .object({
    wmem: z.number().int().optional(),
    rmem: z.number().int().optional(),
    autocorkingSize: z.number().int().optional(),
    bufType: z.number().int().optional(),
    testlinkTime: z.number().int().optional(),
  })
  .strict();

export const policySchema = z
  .object({
    /** Extended resource injected into the pod. */
    resourceName: z.string().min(1).default(ERDMA_RESOURCE),
    /** Add the eRDMA resource when no container asks for it. */
    injectResource: z.boolean().default(true),
    /** Which containers get the resource: the first one, or every one. */
    resourceContainer: z.enum(['first', 'all']).default('first'),
    /** Require the agent's capable label through required node affinity. */
    injectNodeAffinity: z.boolean().default(true),
    /** Turn IPv6 off in the pod netns unless the pod keeps it (SMC-R carries IPv4 only). */
    disableIPv6: z.boolean().default(true),
    /** Cluster-wide tuning defaults, overridden per pod by the tuning annotations. */
    defaultTuning: tuningSchema.prefault({}),
    /**
     * RDMA resources pods may ask for (besides resourceName): RDMA-aware rules apply to pods
     * that get one. rdma/hca is the shared resource of Lingjun and SCC nodes.
     */
    rdmaResources: z.array(z.string().min(1)).default(['rdma/hca']),
    /** The shared HCA resource that needs hostNetwork unless the cluster enables RDMA for other pods. */
    hcaResource: z.string().min(1).default('rdma/hca'),
    /**
     * The host directory the agent installs the preload library in (agent.preloadDir): pods bound
     * to nodes with AF_SMC only get it mounted and added to LD_PRELOAD.
     */
    preloadDir: z.string().min(1).default('/opt/erdma-smcr/lib'),
  })
  .strict();

export const webhookSchema = z
  .object({
    host: z.string().default('127.0.0.1'),
    port: port.default(8443),
    /** Serve /metrics, /healthz, /readyz on a separate plain-HTTP port. */
    metricsEnabled: z.boolean().default(true),
    metricsPort: port.default(8080),
    metricsHost: z.string().default('127.0.0.1'),
    certDir: z.string().default('webhook-certs'),
    /** Generate a CA and serving certificate into certDir when absent (files mode). */
    generateCerts: z.boolean().default(true),
    /**
     * files: certificates in certDir (generated for development, or mounted by cert-manager), reloaded on change.
     * secret: the webhook keeps CA and serving certificate in a Secret and the caBundle of its webhook configurations.
     */
    certSource: z.enum(['files', 'secret']).default('files'),
    secretName: z.string().min(1).default('erdma-smcr-webhook-certs'),
    /** Webhook configurations whose caBundle the webhook keeps (secret mode); '' manages none of that kind. */
    mutatingWebhookConfiguration: z.string().default('erdma-smcr'),
    validatingWebhookConfiguration: z.string().default('erdma-smcr'),
    /** Extra DNS names or IPs in the serving certificate. */
    extraNames: z.array(z.string().min(1)).default([]),
    caValiditySeconds: z
      .number()
      .int()
      .min(10)
      .default(3 * 365 * 24 * 3600),
    certValiditySeconds: z
      .number()
      .int()
      .min(5)
      .default(90 * 24 * 3600),
    /** How long a new CA is in the caBundle before it signs (API servers pick up the bundle meanwhile). */
    caPromotionDelaySeconds: z.number().min(0).default(600),
    /** How often expiry and the caBundle are re-checked (drift is repaired then). */
    certCheckIntervalSeconds: z.number().min(0.1).default(60),
    serviceName: z.string().default('erdma-smcr-webhook'),
    namespace: z.string().default('erdma-smcr'),
    /** Request body limit in bytes: at least 7 MiB, because an UPDATE carries two 3 MiB objects. */
    bodyLimit: z
      .number()
      .int()
      .min(1024)
      .default(8 * 1024 * 1024),
    shutdownGraceMs: z.number().int().min(0).default(25_000),
    /**
     * On SIGTERM, keep accepting and serving this long while /readyz fails, before the graceful
     * close: Endpoints and kube-proxy need a moment to stop sending new connections to a pod that
     * is going away, and a refused connection admits the pod unmutated (failurePolicy: Ignore).
     * Every HTTP/1.1 response from SIGTERM on says Connection: close (server.ts says why).
     */
    shutdownDelayMs: z.number().int().min(0).default(0),
    /**
     * Deadlines on both protocols. The API server gives a webhook call at most 30 s, so nothing
     * slower is a real caller: a TLS handshake and an HTTP/1.1 request's headers (or an HTTP/2
     * session's first stream) within headersTimeoutMs, a whole request body within
     * requestTimeoutMs, an idle connection closed after idleTimeoutMs.
     */
    headersTimeoutMs: z.number().int().min(100).default(10_000),
    requestTimeoutMs: z.number().int().min(100).default(30_000),
    idleTimeoutMs: z.number().int().min(100).default(65_000),
    /** Bytes that unfinished request bodies may hold in total; past it the oldest is dropped. */
    pendingBodyBytes: z
      .number()
      .int()
      .min(1024)
      .default(16 * 1024 * 1024),
    /**
     * Open connections; past it the oldest connection that never got a full response is closed,
     * else the one idle the longest (never one with a request in flight).
     */
    maxConnections: z.number().int().min(1).default(500),
    /** Open HTTP/2 streams across all connections; past it the stream open the longest is cancelled. */
    maxStreams: z.number().int().min(1).default(256),
  })
  .strict()
  .refine((w) => w.pendingBodyBytes >= w.bodyLimit, {
    message: 'webhook.pendingBodyBytes must be at least webhook.bodyLimit',
    path: ['pendingBodyBytes'],
  });

export const clusterSchema = z
  .object({
    /** Offline cluster profile file (YAML). Absent: the embedded default profile. */
    profile: z.string().optional(),
    /** NodeList file for the offline view. */
    nodes: z.string().optional(),
    /** offline: the profile (and node list) above; live: watch the nodes and the profile ConfigMap. */
    source: z.enum(['offline', 'live']).default('offline'),
    /** Kubeconfig file; absent: $KUBECONFIG, ~/.kube/config, then the in-cluster service account. */
    kubeconfig: z.string().optional(),
    /** ConfigMap (in webhook.namespace) whose profile.yaml is the live cluster profile; absent ConfigMap: the profile above. */
    configMap: z.string().min(1).default('erdma-smcr-cluster'),
  })
  .strict();

/** Which RDMA devices a resource serves; every given field must match (regexes are anchored by you). */
const selectorSchema = z
  .object({
    /** Kernel drivers (sysfs device/driver), e.g. erdma, mlx5_core. */
    drivers: z.array(z.string().min(1)).min(1).optional(),
    /** PCI vendor IDs (sysfs device/vendor), e.g. 0x1ded (Alibaba), 0x15b3 (Mellanox). */
    vendors: z
      .array(z.string().regex(/^0x[0-9a-fA-F]{4}$/, 'a PCI vendor ID like 0x15b3'))
      .min(1)
      .optional(),
    /** PCI device IDs (sysfs device/device). */
    deviceIds: z
      .array(z.string().regex(/^0x[0-9a-fA-F]{4}$/, 'a PCI device ID like 0x101e'))
      .min(1)
      .optional(),
    /** Regular expression on the RDMA device name (erdma_0, mlx5_1, ...). */
    rdmaDevice: z.string().min(1).refine(isRegExp, 'a valid regular expression').optional(),
    /** Regular expression on the device's network interface name. */
    netdev: z.string().min(1).refine(isRegExp, 'a valid regular expression').optional(),
  })
  .strict()
  .refine(
    (s) => Object.values(s).some((v) => v !== undefined),
    'a selector needs at least one field',
  );

const resourceSchema = z
  .object({
    /** Extended resource name, e.g. aliyun/erdma or rdma/hca. */
    name: z
      .string()
      .regex(
        /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?\/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/,
        'an extended resource name like rdma/hca',
      ),
    selector: selectorSchema,
    /** exclusive: slots per device, a pod gets the devices behind its IDs; shared: `slots` identical IDs, each gets every selected device. */
    mode: z.enum(['exclusive', 'shared']).default('exclusive'),
    /** exclusive: IDs per device (default 64); shared: IDs in all (default 1000). */
    slots: z.number().int().min(1).max(100_000).optional(),
    /** exclusive only: numa (the devices behind the IDs, NUMA-aligned) or all (every device). */
    allocation: z.enum(['numa', 'all']).default('numa'),
    /** Socket in the kubelet's device-plugins directory (default derived from the name). */
    socketName: z
      .string()
      .regex(/^[A-Za-z0-9._-]+\.sock$/)
      .optional(),
    /**
     * true: on a node where the selector matches nothing, the resource is served with no devices
     * (capacity 0, until one appears) instead of refusing to start: one DaemonSet for mixed nodes.
     */
    optional: z.boolean().default(false),
  })
  .strict();

export type ResourceSpec = z.infer<typeof resourceSchema>;

function isRegExp(s: string): boolean {
  try {
    new RegExp(s);
    return true;
  } catch {
    return false;
  }
}

export const agentSchema = z
  .object({
    /** This node's name (the DaemonSet sets it from spec.nodeName); needed for labels and the pod watch. */
    nodeName: z.string().optional(),
    /** Root of the host filesystem as the agent sees it (/host in the DaemonSet). */
    hostRoot: z.string().default('/'),
    kubeletDir: z.string().default('/var/lib/kubelet'),
    resourceName: z.string().default(ERDMA_RESOURCE),
    socketName: z
      .string()
      .regex(/^[A-Za-z0-9._-]+\.sock$/)
      .default('erdma-smcr.sock'),
    /** Pods that may share one device: each device is advertised this many times. */
    slotsPerDevice: z.number().int().min(1).max(1024).default(64),
    /** numa: a pod gets the device(s) behind its IDs, NUMA-aligned; all: every pod gets every device. */
    allocation: z.enum(['numa', 'all']).default('numa'),
    /**
     * The resources the device plugin serves, one kubelet registration each. Absent: the one
     * resource above (resourceName, slotsPerDevice, allocation) over the node's eRDMA devices.
     */
    resources: z.array(resourceSchema).min(1).optional(),
    pollMs: z.number().int().min(100).default(1000),
    /** eRDMA driver mode; auto: compat when devices are named roce*, else default. */
    driverMode: z.enum(['auto', 'default', 'compat', 'ofed']).default('auto'),
    /** Other RDMA drivers to serve too (e.g. rxe in test clusters). */
    extraDrivers: z.array(z.string()).default([]),
    /** Prefix of device node paths handed to kubelet ('/': /dev/infiniband/... as on any node). */
    deviceRoot: z.string().default('/'),
    /** The agent's /proc (kernel release, net.smc with hostNetwork, pod processes with hostPID). */
    procRoot: z.string().default('/proc'),
    /** Host paths (below hostRoot for the agent; as-is in the CNI config the runtime runs). */
    cniConfDir: z.string().default('/etc/cni/net.d'),
    cniBinDir: z.string().default('/opt/cni/bin'),
    cniStateDir: z.string().default('/var/lib/cni/erdma-smcr'),
    pnetIdFile: z.string().default('/run/erdma-smcr/pnetid'),
    cniLogFile: z.string().default('/var/log/erdma-smcr/cni.log'),
    /** Where the preload library goes on the host (the webhook mounts it into preload pods). */
    preloadDir: z.string().default('/opt/erdma-smcr/lib'),
    /** The host's bpffs directory the IPPROTO_SMC program is pinned in (the plugin's bpfDir). */
    bpfDir: z.string().default('/sys/fs/bpf/erdma-smcr'),
    /** Our native binary (CNI plugin and pnet tool) in the image; default: native/build/erdma-smcr of this package. */
    nativeBinary: z.string().optional(),
    /** Duties, each can be switched off. */
    devicePlugin: z.boolean().default(true),
    nodeLabels: z.boolean().default(true),
    hostPnet: z.boolean().default(true),
    cniInstall: z.boolean().default(true),
    podEvents: z.boolean().default(true),
    /** Apply SMC-R to running pods the plugin missed (needs hostPID). */
    lateApply: z.boolean().default(true),
    /**
     * Configure secondary eRDMA ENIs from the ECS instance metadata (address, routes at metric
     * 200+, MTU), as the platform's eRDMA controller does. Off by default: on ACK that controller
     * (or Terway) owns the ENIs; turn it on for self-managed clusters.
     */
    manageEni: z.boolean().default(false),
    /** The ECS instance metadata service. */
    metadataUrl: z.url().default('http://100.100.100.200'),
    /** Each metadata request's time limit, and how many times a failed one is tried again (with doubling back-off). */
    metadataTimeoutMs: z.number().int().min(50).default(2000),
    metadataRetries: z.number().int().min(0).max(10).default(3),
    /**
     * Keep the eRDMA driver in `preferDriver` mode and load the modules that mode needs (smc;
     * nvidia_peermem on GPU nodes in ofed mode). Off by default: on ACK the platform's eRDMA
     * controller does this.
     */
    manageDriver: z.boolean().default(false),
    /** auto: ofed on nodes with NVIDIA GPUs, else default. */
    preferDriver: z.enum(['auto', 'default', 'compat', 'ofed']).default('auto'),
    /** The host's modprobe as a command line; default: `chroot <hostRoot> modprobe` (`modprobe` when hostRoot is /). */
    modprobe: z.array(z.string().min(1)).min(1).optional(),
    /** MTU for configured ENIs: auto copies the primary ENI's when it is a jumbo MTU (the instance has jumbo frames), else leaves it. */
    eniMtu: z.union([z.literal('auto'), z.number().int().min(68).max(65535)]).default('auto'),
    /** How often each SMC-R pod's connections are read from the kernel (smc_diag) for metrics and SMCRFallback Events; 0: never. */
    smcSampleMs: z.number().int().min(0).default(30_000),
    /** At most one SMCRFallback Event per pod and reason in this time. */
    fallbackEventMs: z.number().int().min(0).default(3_600_000),
    /** How often capability, labels and host pnet are re-checked. */
    refreshMs: z.number().int().min(100).default(30_000),
    /** How long a started SMC-R pod may lack a plugin record before it counts as missed. */
    podGraceMs: z.number().int().min(0).default(15_000),
    metricsEnabled: z.boolean().default(true),
    metricsHost: z.string().default('0.0.0.0'),
    metricsPort: port.default(9809),
  })
  .strict();

export const configSchema = z
  .object({
    logLevel: z
      .enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'])
      .default('info'),
    policy: policySchema.prefault({}),
    webhook: webhookSchema.prefault({}),
    cluster: clusterSchema.prefault({}),
    agent: agentSchema.prefault({}),
  })
  .strict();

export type Config = z.infer<typeof configSchema>;
export type PolicyConfig = z.infer<typeof policySchema>;
export type TuningConfig = z.infer<typeof tuningSchema>;
export type AgentConfig = z.infer<typeof agentSchema>;
