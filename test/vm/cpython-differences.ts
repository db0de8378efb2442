// What SMC changes for a program, as CPython's own test suite shows it (test/vm/cpython.test.ts),
// each difference with its reason in the kernel. docs/support-matrix.md ("What SMC changes for a
// program") lists the same rows, by the `doc` key (test/unit/docs.test.ts holds them equal).

/** The runs of cpython.sh: `bpf` on 6.12 with loopback-ism; `preload` on 6.1 (every loopback connect through SMC, which falls back there). */
export type Run = 'bpf' | 'preload';

export interface Difference {
  /** The row's key in docs/support-matrix.md. */
  readonly doc: string;
  /** Test ids (unittest's) it covers. */
  readonly tests: RegExp;
  /** For a skip: the reason the suite gives (a skip for another reason is not this one). */
  readonly reason?: RegExp;
  readonly kind: 'fails' | 'skipped';
  /** The runs it was seen in. */
  readonly runs: readonly Run[];
  /** Why, from the kernel's code. */
  readonly why: string;
}

export const DIFFERENCES: readonly Difference[] = [
  {
    doc: 'send after the peer closed',
    // BufferIOTest.testRecvFromIntoSmallBuffer meets it only when its server side has closed before
    // the client thread's send(): seen once in two full runs, and not when run again alone.
    tests:
      /^test\.test_socket\.(NetworkConnectionBehaviourTest\.testOutsideTimeout|BufferIOTest\.testRecvFromIntoSmallBuffer)$/,
    kind: 'fails',
    runs: ['bpf'],
    why: 'smc_tx_sendmsg fails a send with ECONNRESET as soon as the peer has closed (smc_cdc_rxed_any_close); TCP accepts that send and reports the reset on a later call',
  },
  {
    doc: 'abortive close',
    tests: /^test\.test_ssl\.TestPreHandshakeClose\.test_preauth_data_to_tls_(client|server)$/,
    kind: 'fails',
    runs: ['bpf'],
    why: "SO_LINGER with a zero timeout makes TCP's close send an RST that discards what the peer has not read; SMC's close (smc_close_active, smc_close_final) is orderly: the peer reads the data first, then the end",
  },
  {
    doc: 'connect again after a failed connect',
    tests: /^test\.test_asyncio\.test_sock_lowlevel\.\w+\.test_sock_client_connect_racing$/,
    // ECONNABORTED as a rule; in one run of 2026-12-02 the first connect ended ECONNRESET
    // ("[Errno 104] Connect call failed"), which makes the test skip the same way.
    reason: /Errno 10[34]|Software caused connection abort/,
    kind: 'skipped',
    runs: ['bpf', 'preload'],
    why: 'an SMC socket whose connect failed is SMC_CLOSED, and connect() on it returns ECONNABORTED (smc_connect); a TCP socket may connect again',
  },
  {
    doc: 'IPv6 turned off',
    tests: /./,
    reason: /^'IPv6 (required for this test|not supported or enabled)/,
    kind: 'skipped',
    runs: ['bpf', 'preload'],
    why: 'not SMC: our CNI plugin turns IPv6 off in an annotated pod (SMC-R carries IPv4 only), so tests that need IPv6 skip; smcr.erdma.io/keep-ipv6 keeps it',
  },
];

/**
 * What SMC changes for a Go program, as Go's own net package tests show it (-short, static, under
 * `bpf` on 6.12 with loopback-ism: test/smcr-vm/cpython.sh). Test names as `go test -v` prints
 * them; the `doc` keys are rows of the same table.
 */
/**
 * What a module of the standard library leaves behind under a mechanism and not in the baseline
 * (regrtest's "env changed", cpython.sh's envsuite), with the warning regrtest prints for it.
 */
export interface EnvDifference {
  /** The row's key in docs/support-matrix.md. */
  readonly doc: string;
  readonly module: RegExp;
  /** A regrtest "Warning -- ..." line for the module that only the mechanism's run prints. */
  readonly warning: RegExp;
  /** Whether regrtest may then mark the module "env changed" (its tests themselves pass). */
  readonly envChanged: boolean;
  readonly runs: readonly Run[];
  readonly why: string;
}

export const ENV_DIFFERENCES: readonly EnvDifference[] = [
  {
    doc: 'send after the peer closed',
    // imaplib's test servers answer from a handler thread (socketserver) after the client side
    // has closed (in its TLS tests, after a failed or finished handshake): over TCP the write or
    // the TLS close succeeds, over SMC it raises in the thread, and regrtest reports the thread's
    // uncaught exception. Seen: SSLEOFError under bpf on 6.12 (the module's result SUCCESS).
    module: /^test_imaplib$/,
    warning: /^Uncaught thread exception: (ConnectionResetError|SSLEOFError|BrokenPipeError)$/,
    envChanged: true,
    runs: ['bpf', 'preload'],
    why: "smc_tx_sendmsg fails a send with ECONNRESET as soon as the peer has closed (smc_cdc_rxed_any_close); the test server's handler thread writes (or closes TLS) after its client closed, and regrtest reports the uncaught exception in that thread",
  },
];

export const GO_DIFFERENCES: readonly Difference[] = [
  {
    doc: 'abortive close',
    tests: /^TestNotTemporaryRead$/,
    kind: 'fails',
    runs: ['bpf'],
    why: "the server sets SO_LINGER 0 and closes; over TCP that is an RST and the client's Read fails with ECONNRESET, over SMC-D the close is orderly (smc_close_active) and the Read returns io.EOF",
  },
  {
    doc: 'IPv6 turned off',
    tests: /^Test\w+$/,
    reason: /IPv6|ipv6|dual.?stack/i,
    kind: 'skipped',
    runs: ['bpf'],
    why: 'not SMC: our CNI plugin turns IPv6 off in an annotated pod; the net package probes for it and skips what needs it',
  },
];

/** The tests among `skipped` (one each, with the suite's reason) that no skip in `known` explains, as "id: reason". */
export function unexplainedSkips(
  skipped: readonly { readonly id?: string; readonly why?: string }[],
  known: readonly Difference[],
): string[] {
  return skipped
    .filter(
      (s) =>
        !known.some(
          (d) =>
            d.kind === 'skipped' &&
            d.tests.test(s.id ?? '') &&
            (d.reason?.test(s.why ?? '') ?? true),
        ),
    )
    .map((s) => `${s.id}: ${s.why}`);
}
