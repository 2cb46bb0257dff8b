#!/usr/bin/env bash
# Re-capture the real iperf3 client JSON fixtures in this directory (needs root, iproute2, iperf3 on PATH):
#   sudo tests/data/iperf3/capture.sh [output-dir]
# iperf3-3.12-{tcp,udp,error}-client.json are older captures made by edgebench on a pod network; not redone here.
# Three network namespaces: it-a (client, 10.77.0.1) -- it-r (router) -- it-b (server, 10.77.1.2). The router
# is there so that the lossy capture can shape the path (tbf on the router's link to the server) without the
# shaping pushing back on the sender's socket, which it does when the qdisc sits on the sender's own interface.
# The namespaces are deleted on exit, whatever happens.
set -euo pipefail
OUT=${1:-$(cd "$(dirname "$0")" && pwd)}
VER=$(iperf3 --version | head -1 | awk '{print $2}')
A=it-a B=it-b R=it-r PORT=5201 SERVER=10.77.1.2 SRV=

cleanup() {
    [ -n "$SRV" ] && kill "$SRV" 2>/dev/null || true  # the one-off server this script started, if still running
    for ns in "$A" "$R" "$B"; do ip netns del "$ns" 2>/dev/null || true; done
}
trap cleanup EXIT INT TERM
cleanup
for ns in "$A" "$R" "$B"; do ip netns add "$ns"; ip -n "$ns" link set lo up; done
ip link add it-a0 netns "$A" type veth peer name it-ra netns "$R"
ip link add it-b0 netns "$B" type veth peer name it-rb netns "$R"
ip -n "$A" addr add 10.77.0.1/24 dev it-a0; ip -n "$R" addr add 10.77.0.254/24 dev it-ra
ip -n "$B" addr add 10.77.1.2/24 dev it-b0; ip -n "$R" addr add 10.77.1.254/24 dev it-rb
for l in "$A it-a0" "$R it-ra" "$R it-rb" "$B it-b0"; do set -- $l; ip -n "$1" link set "$2" up; done
ip -n "$A" route add default via 10.77.0.254; ip -n "$B" route add default via 10.77.1.254
ip netns exec "$R" sysctl -qw net.ipv4.ip_forward=1

# run <mode> <client args...>: one-off JSON server in it-b, client in it-a, client stdout -> the fixture
run() {
    local mode=$1; shift
    ip netns exec "$B" iperf3 --server --one-off --json --port "$PORT" >/dev/null 2>&1 &
    SRV=$!
    for _ in $(seq 100); do ip netns exec "$B" ss -Hltn "sport = :$PORT" | grep -q . && break; sleep 0.05; done
    ip netns exec "$A" iperf3 --client "$SERVER" --port "$PORT" --json "$@" \
        >"$OUT/iperf3-$VER-$mode-client.json" || true
    wait "$SRV" || true
    SRV=
    echo "captured $mode"
}

run tcp-netns -t 1
run udp-100M -t 1 -u -b 100M -l 1400
run reverse-tcp -t 1 -R
run reverse-udp -t 1 -R -u -b 100M -l 1400
run bidir-tcp -t 1 --bidir
run bidir-udp -t 1 --bidir -u -b 100M -l 1400
run p4-tcp -t 1 -P 4
run bytes-10M-tcp -n 10M
run blocks-100-tcp -k 100
# UDP -k 1: a single datagram; in the committed capture the server counted none of it (0 bytes received). Whether
# it does is a race, so a re-capture may differ.
run udp-blocks-1 -u -k 1 -l 1400
run udp-get-server-output -t 1 -u -b 100M -l 1400 --get-server-output
run reverse-tcp-get-server-output -t 1 -R --get-server-output
# loss: the router forwards to the server at 20 Mbit/s, the client sends UDP at 100 Mbit/s
ip netns exec "$R" tc qdisc add dev it-rb root tbf rate 20mbit burst 32kbit latency 50ms
run udp-loss -t 2 -u -b 100M -l 1400
run udp-loss-get-server-output -t 2 -u -b 100M -l 1400 --get-server-output
ip netns exec "$R" tc qdisc del dev it-rb root
# no server listening
ip netns exec "$A" iperf3 --client "$SERVER" --port "$PORT" --json -t 1 \
    >"$OUT/iperf3-$VER-conn-refused-client.json" || true
echo "captured conn-refused"
