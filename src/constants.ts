// Names other parts of the system and our users rely on (see DESIGN.md "Contracts").

/** The one annotation a user writes on a pod to ask for SMC-R. */
export const SMCR_ANNOTATION = 'network.alibabacloud.com/erdma-smcr';

/** Prefix of every key this project owns (annotations and node labels). */
export const OWN_PREFIX = 'smcr.erdma.io/';

/** Webhook-owned annotation: the resolved settings the CNI plugin applies. Users cannot forge it. */
export const SETTINGS_ANNOTATION = `${OWN_PREFIX}settings`;

/** Optional per-pod annotation naming the container that gets the eRDMA resource. */
export const CONTAINER_ANNOTATION = `${OWN_PREFIX}container`;

/**
 * Optional per-pod annotation naming the pod's ResourceClaim (spec.resourceClaims[].name) that gives
 * it its eRDMA device through DRA: the webhook then injects no aliyun/erdma beside it.
 */
export const DEVICE_CLAIM_ANNOTATION = `${OWN_PREFIX}device-claim`;

/** Optional per-pod tuning annotations (validated), each mapped to one per-netns knob. */
export const TUNING_ANNOTATIONS = {
  wmem: `${OWN_PREFIX}wmem`,
  rmem: `${OWN_PREFIX}rmem`,
  autocorkingSize: `${OWN_PREFIX}autocorking-size`,
  bufType: `${OWN_PREFIX}buf-type`,
  testlinkTime: `${OWN_PREFIX}testlink-time`,
  keepIPv6: `${OWN_PREFIX}keep-ipv6`,
} as const;

/**
 * Optional per-pod annotations naming the ports a pod's connections use SMC on (#93): destination
 * ports of the connections it opens, and ports it listens on. `*` or `6379,8000-8999,!8080`.
 */
export const SELECTION_ANNOTATIONS = {
  connectPorts: `${OWN_PREFIX}connect-ports`,
  listenPorts: `${OWN_PREFIX}listen-ports`,
} as const;

/**
 * The environment variable that carries a pod's selection to the preload library (native/src/selection.h):
 * `nets=CIDR,...;connect=PORTS;listen=PORTS`.
 */
export const SELECT_ENV = 'ERDMA_SMCR_SELECT';

/** Node labels written by the node agent and read by the webhook. */
export const NODE_LABELS = {
  capable: `${OWN_PREFIX}capable`,
  driverMode: `${OWN_PREFIX}driver-mode`,
  reason: `${OWN_PREFIX}reason`,
  /** How the node turns a pod's TCP into SMC: tcp2smc, bpf or preload (docs/support-matrix.md). */
  mechanism: `${OWN_PREFIX}mechanism`,
  /**
   * Whether the node's kernel has loopback-ism (`true`/`false`; absent while unknown): SMC-D between
   * pods of the node through shared memory, which the CLC handshake prefers to SMC-R.
   */
  smcdLoopback: `${OWN_PREFIX}smcd-loopback`,
  /**
   * TCP ports (`LOW-HIGH`) the erdma driver in compat mode reserves in every network namespace for
   * eRDMA's out-of-band connections (its module parameter reserve_ports_base, 16 ports), as the
   * agent read them on the node; absent where it reserves none.
   */
  erdmaReservedPorts: `${OWN_PREFIX}erdma-reserved-ports`,
  /** The same for the smc module of Alibaba's kernels (its rsvd_ports_base, 16 ports). */
  smcReservedPorts: `${OWN_PREFIX}smc-reserved-ports`,
  /**
   * Why our device plugin does not serve a resource on this node (absent while it does):
   * `other-registrant`, another device plugin registered it with the kubelet first.
   */
  devicePluginReason: `${OWN_PREFIX}device-plugin-reason`,
  /**
   * Whether the node's mechanism enforces a pod's SMC selection per connection (#93): `enforced`
   * (the preload library; IPPROTO_SMC with smc_hs_ctrl) or `none` (tcp2smc; IPPROTO_SMC without
   * smc_hs_ctrl: every TCP connection of the pod becomes SMC). Absent while unknown.
   */
  selection: `${OWN_PREFIX}selection`,
} as const;

/** Node annotations written by the node agent and read by the webhook. */
export const NODE_ANNOTATIONS = {
  /**
   * The node's pod networks the Node object does not show (#100): the vSwitch CIDRs of its
   * secondary ENIs as the ECS metadata service gives them (Terway's pods take their addresses
   * there, and its nodes have no podCIDRs), comma-separated; absent where there are none.
   */
  podNetworks: `${OWN_PREFIX}pod-networks`,
} as const;

/**
 * Webhook-owned: set to "preload" on a pod given the preload library (nodes with AF_SMC only); our
 * CNI plugin then needs no tcp2smc knob for it.
 */
export const MECHANISM_ANNOTATION = `${OWN_PREFIX}mechanism`;

/**
 * The preload library: its file name; the emptyDir the webhook gives a pod and where its containers
 * mount it; the init container of ours that copies the library there from our image (#69: no
 * hostPath, so Pod Security baseline and restricted admit the pod).
 */
export const PRELOAD = {
  library: 'libsmc-preload.so',
  volume: 'erdma-smcr-preload',
  mountPath: '/run/erdma-smcr-preload',
  initContainer: 'erdma-smcr-preload',
  /** Our native binary in the image; the library lies beside it. */
  installer: '/app/native/build/erdma-smcr',
} as const;

/** Our image as the manifests name it (manifests/base/kustomization.yaml; a test keeps them equal). */
export const IMAGE = 'ghcr.io/erdma-smcr/erdma-smcr:0.1.0';

/**
 * Namespaces the webhook configurations leave out (namespaceSelector, manifests/base): the API
 * server never sends their pods to the webhook, so `check` says so instead of judging them.
 */
export const EXCLUDED_NAMESPACES: readonly string[] = ['kube-system', 'erdma-smcr'];

/** Extended resource served by the device plugin. */
export const ERDMA_RESOURCE = 'aliyun/erdma';

/** CNI plugin type and binary name. */
export const CNI_PLUGIN_TYPE = 'erdma-smcr';

/** Version of the settings document carried in SETTINGS_ANNOTATION. */
export const SETTINGS_VERSION = 1;

/** pino's levels, as --log-level, ERDMA_SMCR_LOG_LEVEL and logLevel take them. */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
