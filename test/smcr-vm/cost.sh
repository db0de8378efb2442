# Sourced by init.sh when the VM boots with smcr_scenario=cost (bench/smc-cost.ts): what SMC costs
# a pod's connections, per mechanism and per peer, against plain TCP timed in the same boot.
# For each mechanism the kernel offers (trixie's 6.12: the IPPROTO_SMC BPF program and the preload
# library; bookworm's 6.1: the preload library; no Debian kernel has net.smc.tcp2smc), a client pod
# with SMC-R connects to:
#   smcr     an SMC-R pod (an RDMA device on the same pnet): SMC-R
#   nosmc    a pod without SMC: the SYN-ACK has no SMC option, so the client falls back at once
#   decline  an SMC pod with no RDMA device it shares: the CLC proposal is declined, then TCP
#   loopback a server in its own pod over 127.0.0.1 (a sidecar): no RDMA device serves lo; also
#            connected as an event loop connects (loopback_nb: non-blocking, then poll)
# and a plain client connects to the SMC-R pod (server: what the SMC listener costs the clients that
# cannot use it: probes, scrapes). With the SMC selection on (#93: a client pod whose selection is
# the SMC pods' addresses and port 7000), where the mechanism enforces it, the same client connects to:
#   sel_smcr     the SMC-R pod on the selected port: SMC-R as before
#   sel_excluded the SMC-R pod on a port the selection leaves out (7300): TCP from the first packet
#   sel_outside  a pod outside the selection's networks (without SMC): TCP from the first packet
#   sel_decline  the SMC pod with no shared RDMA device, on the excluded port: TCP, no CLC to decline
# The baseline is a plain client and a plain server. Each case
# runs N connects (socket, connect, close) and N short exchanges (a new connection, 100 bytes each
# way), then one bulk transfer for smcr and the baseline. Every line is a "SMCRVM cost ..." record.
mkdir -p /sys/fs/bpf
mount -t bpf bpf /sys/fs/bpf || fail "mount bpffs"
mechs=$(erdma-smcr mechanisms)
say "mechanisms=$mechs"
N=$(sed -n 's/.*smcr_cost_n=\([0-9]*\).*/\1/p' /proc/cmdline)
[ -n "$N" ] || N=300
BULK=16777216
PRELOAD=LD_PRELOAD=/opt/erdma-smcr/lib/libsmc-preload.so
case "$(echo "$mechs" | sed -n 's/^{"mechanism":"\([a-z0-9]*\)".*/\1/p')" in
  bpf) MECHS="bpf preload" ;;
  preload) MECHS="preload" ;;
  *) fail "no SMC mechanism on this kernel: $mechs" ;;
esac
say "cost_mechanisms=$MECHS n=$N"

# The annotations of an SMC-R pod of mechanism M whose settings document (as the webhook writes
# it) carries the selection SEL.
selected() { # mechanism selection
  m_ann=""
  [ "$1" = preload ] && m_ann=',"smcr.erdma.io/mechanism":"preload"'
  printf '{"network.alibabacloud.com/erdma-smcr":"true","smcr.erdma.io/settings":"{\\"version\\":1,\\"sysctls\\":{\\"net.smc.tcp2smc\\":\\"1\\"},\\"select\\":\\"%s\\"}"%s}' "$2" "$m_ann"
}

PORT=7000
serve() { # pod env
  ip netns exec "$1" env $2 /bin/smc-cost server $PORT > "/run/cost-server-$1.out" 2>&1 &
}
# One case: N connects, N exchanges, the client's SMC counters after them.
run() { # mechanism case client server env
  eval "dst=\$IP_$4"
  run_to "$1" "$2" "$3" "$dst" "$5" $PORT
}
run_to() { # mechanism case client address env port
  # The first connection of a pair sets up its SMC-R link group (seconds under TCG): not timed.
  ip netns exec "$3" env $5 /bin/smc-cost client "$4" "$6" connect 3 > /dev/null 2>&1
  for mode in connect rr; do
    out=$(ip netns exec "$3" env $5 /bin/smc-cost client "$4" "$6" $mode "$N" 2>&1)
    say "cost mech=$1 case=$2 $out"
  done
  say "coststats mech=$1 case=$2 stats=$(erdma-smcr smc stats --netns "/run/netns/$3" 2>&1 | tr -d ' \n')"
}
bulk() { # mechanism case client server env
  eval "dst=\$IP_$4"
  say "cost mech=$1 case=$2 $(ip netns exec "$3" env $5 /bin/smc-cost client "$dst" $PORT bulk $BULK 2>&1)"
}

pod_add p '{}'
pod_add t '{}'
serve t ""
for m in $MECHS; do
  if [ "$m" = bpf ]; then
    ON='{"network.alibabacloud.com/erdma-smcr":"true"}'
    ENV=""
  else
    ON='{"network.alibabacloud.com/erdma-smcr":"true","smcr.erdma.io/mechanism":"preload"}'
    ENV=$PRELOAD
  fi
  pod_add "c$m" "$ON"
  # The server pods listen with SMC on 7000 only (their selection), as a pod that names its SMC
  # port does: the same servers on 7300, a port both ends leave out, are plain TCP listeners.
  # Without the selection (trixie's bpf: no smc_hs_ctrl) 7300 stays an SMC listener.
  SRV_SEL="nets=10.88.0.0/24;connect=*;listen=7000"
  SENV_SRV=""
  [ "$m" = preload ] && SENV_SRV="$ENV ERDMA_SMCR_SELECT=$SRV_SEL"
  pod_add "s$m" "$(selected "$m" "$SRV_SEL")"
  pod_add "x$m" "$(selected "$m" "$SRV_SEL")" nordma
  serve "s$m" "${SENV_SRV:-$ENV}"
  serve "x$m" "${SENV_SRV:-$ENV}"
  for srv in "s$m" "x$m"; do
    ip netns exec "$srv" env ${SENV_SRV:-$ENV} /bin/smc-cost server 7300 > "/run/cost-server7300-$srv.out" 2>&1 &
  done
  # A server in the client's own pod (a sidecar, a local agent), reached over 127.0.0.1.
  ip netns exec "c$m" env $ENV /bin/smc-cost server 7100 > "/run/cost-server-c$m.out" 2>&1 &
  sleep 1
  # Interleaved, so that the drift of an emulated CPU hits every case alike: the baseline first.
  run "$m" tcp p t ""
  run "$m" smcr "c$m" "s$m" "$ENV"
  run "$m" nosmc "c$m" t "$ENV"
  run "$m" decline "c$m" "x$m" "$ENV"
  run "$m" server p "s$m" ""
  run_to "$m" loopback "c$m" 127.0.0.1 "$ENV" 7100
  # The same as an event loop connects (non-blocking, then poll).
  run_to "$m" loopback_nb "c$m" 127.0.0.1 "$ENV SMC_COST_NONBLOCK=1" 7100
  # The selection: the SMC pods' addresses and port 7000. Under bpf only where smc_hs_ctrl keeps it.
  if [ "$m" = preload ] || echo "$mechs" | grep -q '"selection":{"ok":true'; then
    eval "sel=\"nets=\$IP_s$m/32,\$IP_x$m/32;connect=7000;listen=*\""
    pod_add "k$m" "$(selected "$m" "$sel")"
    SENV=""
    [ "$m" = preload ] && SENV="$PRELOAD ERDMA_SMCR_SELECT=$sel"
    say "cost_selection mech=$m select=$sel state=$(tr -d ' ' < /run/erdma-smcr/state/k${m}_eth0.json)"
    run "$m" sel_smcr "k$m" "s$m" "$SENV"
    eval "run_to \"$m\" sel_excluded \"k$m\" \$IP_s$m \"$SENV\" 7300"
    run "$m" sel_outside "k$m" t "$SENV"
    eval "run_to \"$m\" sel_decline \"k$m\" \$IP_x$m \"$SENV\" 7300"
  fi
  run "$m" tcp2 p t ""
  bulk "$m" tcp p t ""
  bulk "$m" smcr "c$m" "s$m" "$ENV"
  say "coststats_server mech=$m stats=$(erdma-smcr smc stats --netns "/run/netns/x$m" 2>&1 | tr -d ' \n')"
done
