// The DRA driver's domain: its name, and a claim as it prepares it (the checkpoint keeps these, the
// CDI spec and the claim's status are made from them).

/** Our DRA driver's name: the domain of its attributes, its CDI vendor, its kubelet plugin dir. */
export const DRA_DRIVER = 'erdma.smcr.erdma.io';

/** One allocated device of a claim, as the API's allocation result names it. */
export interface PreparedDevice {
  readonly requestNames: readonly string[];
  readonly poolName: string;
  readonly deviceName: string;
  /** The RDMA device it is (erdma_0), its verbs node, its PNETID. */
  readonly rdmaDevice: string;
  readonly uverbs: string;
  readonly pnetId: string;
  readonly cdiDeviceIds: readonly string[];
  /** The allocation's share (a device several claims share, allowMultipleAllocations). */
  readonly shareId?: string;
}

export interface PreparedClaim {
  readonly uid: string;
  readonly namespace: string;
  readonly name: string;
  readonly devices: readonly PreparedDevice[];
}
