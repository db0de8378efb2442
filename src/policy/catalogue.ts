// The admission rules as users look them up (`erdma-smcr rules`): when each denies, how to fix it,
// and the example that shows it. docs/policy.md's tables are these rows (test/unit/policy/catalogue.test.ts).

export interface RuleEntry {
  /** The id every denial carries (`[host-network]`, `rule` in JSON, SARIF's ruleId). */
  readonly id: string;
  /** `smcr`: pods that ask for SMC-R; `rdma`: pods that get an RDMA device without it. */
  readonly scope: 'smcr' | 'rdma';
  /** When it denies (Markdown, as in docs/policy.md). */
  readonly when: string;
  /** What the user changes (Markdown). */
  readonly fix: string;
  /** A manifest in examples/ that it denies. */
  readonly example?: string;
}

export const RULE_CATALOGUE: readonly RuleEntry[] = [
  {
    id: 'annotation-value',
    scope: 'smcr',
    when: "the value is not a boolean Go's `strconv.ParseBool` reads; or (only `check` sees this, the API server refuses such objects itself) one of our annotations is an unquoted YAML boolean, number, timestamp or null",
    fix: 'write `"true"` or `"false"`; quote the value',
    example: 'examples/invalid/annotation-value.yaml',
  },
  {
    id: 'host-network',
    scope: 'smcr',
    when: '`hostNetwork: true`: `tcp2smc` would switch every socket of the node',
    fix: 'drop hostNetwork or the annotation',
    example: 'examples/invalid/host-network.yaml',
  },
  {
    id: 'driver-mode',
    scope: 'smcr',
    when: "the cluster's eRDMA driver runs in `compat` or `ofed` mode",
    fix: 'switch the driver to `default`',
    example: 'examples/compat-cluster/driver-mode.yaml',
  },
  {
    id: 'node-eligibility',
    scope: 'smcr',
    when: "every node the pod may land on (by `nodeName`, `nodeSelector`, required node affinity; or the whole cluster when the node list is complete) cannot run SMC-R: the agent's `capable=false` label (no mechanism works there, [support-matrix.md](support-matrix.md)), a driver mode other than `default`, or, for nodes the agent has not labelled, not Alibaba Cloud Linux 3 or a kernel older than 5.10.134-17",
    fix: 'run on capable nodes',
    example: 'examples/invalid/old-kernel.yaml',
  },
  {
    id: 'ip-family',
    scope: 'smcr',
    when: 'the cluster is IPv6-only; or the pod has IPv6 DNS nameservers while IPv6 will be turned off',
    fix: 'IPv4, or `smcr.erdma.io/keep-ipv6: "true"`',
    example: 'examples/invalid/ipv6-dns.yaml',
  },
  {
    id: 'erdma-resource',
    scope: 'smcr',
    when: '`aliyun/erdma` requested without a limit, requests ≠ limits, not a whole number (read as a Kubernetes quantity: `"1000m"` is 1), or 0 everywhere',
    fix: 'remove the entries (one is injected) or set them to 1',
    example: 'examples/invalid/erdma-zero.yaml',
  },
  {
    id: 'tuning',
    scope: 'smcr',
    when: "a tuning annotation is outside the kernel's range",
    fix: 'the message gives the range',
    example: 'examples/invalid/tuning-range.yaml',
  },
  {
    id: 'container',
    scope: 'smcr',
    when: '`smcr.erdma.io/container` names no container of the pod',
    fix: 'name an existing container',
    example: 'examples/invalid/container-missing.yaml',
  },
  {
    id: 'object-size',
    scope: 'smcr',
    when: 'the pod is larger than the webhook judges: more than 100 required node selector terms, 1,000 node requirements or 10,000 values in them, more than 2,000,000 label comparisons against the nodes, or annotations over 256 KiB',
    fix: 'simplify the node affinity; keep annotations under 256 KiB',
  },
  {
    id: 'rdma-host-network',
    scope: 'rdma',
    when: 'a container gets `rdma/hca` (`policy.hcaResource`), the pod is not `hostNetwork`, and the cluster profile says `rdmaNonHostNetwork: false` (the cluster\'s "RDMA for non-hostNetwork pods" option, which needs an IPv6 cluster, is off)',
    fix: '`hostNetwork: true`, or turn the option on and set `rdmaNonHostNetwork: true` in the profile',
    example: 'examples/invalid/rdma-host-network.yaml',
  },
];

/** Markdown as plain text for a terminal: code spans keep their text, links their text and page. */
export function plain(markdown: string): string {
  return markdown
    .replace(/`([^`]*)`/g, '$1')
    .replace(/\[([^\]]*)\]\(([^)#]*)[^)]*\)/g, (_, text: string, page: string) =>
      !page.endsWith('.md') || page.includes('/')
        ? text
        : text === page
          ? `docs/${page}`
          : `${text} (docs/${page})`,
    );
}
