#!/bin/sh
# Re-creates the real ddsperf captures in this directory (Cyclone DDS ddsperf from Debian 12 cyclonedds-tools
# 0.10.2-2; every process on this host, RTPS over 127.0.0.1 with static unicast peers, domain 7).
# Run as any user: sh tests/data/ddsperf/capture.sh [outdir]. Each process's stdout+stderr is one file, exactly as
# edgebench's driver stores ddsperf-<role>.log. Responders get a longer -D than the initiator and end on their own.
set -eu
out=${1:-$(dirname "$0")}
v=$(dpkg-query -W -f='${Version}' cyclonedds-tools 2>/dev/null | sed 's/-.*//')
v=${v:-unknown}
cfg=$(mktemp)
trap 'rm -f "$cfg"' EXIT
cat >"$cfg" <<'XML'
<?xml version="1.0" encoding="UTF-8"?>
<CycloneDDS xmlns="https://cdds.io/config">
  <Domain Id="any">
    <General>
      <Interfaces><NetworkInterface address="127.0.0.1"/></Interfaces>
      <AllowMulticast>false</AllowMulticast>
    </General>
    <Discovery>
      <ParticipantIndex>auto</ParticipantIndex>
      <MaxAutoParticipantIndex>9</MaxAutoParticipantIndex>
      <Peers><Peer address="127.0.0.1"/></Peers>
    </Discovery>
  </Domain>
</CycloneDDS>
XML
export CYCLONEDDS_URI="file://$cfg"
d="ddsperf -i 7 -c"

# latency, reliable, 64 B, ping-pong as fast as the pong answers
$d -D 7 pong >"$out/ddsperf-$v-lo-lat64-reliable-pong.log" 2>&1 &
p=$!; sleep 0.3
$d -D 4 -Qminmatch:1 -Qinitwait:5 ping size 64 >"$out/ddsperf-$v-lo-lat64-reliable-ping.log" 2>&1 || true
wait $p || true

# latency, best-effort, 1 KiB, 200 pings/s
$d -u -D 7 pong >"$out/ddsperf-$v-lo-lat1k-besteffort-200hz-pong.log" 2>&1 &
p=$!; sleep 0.3
$d -u -D 4 -Qminmatch:1 -Qinitwait:5 ping 200Hz size 1k >"$out/ddsperf-$v-lo-lat1k-besteffort-200hz-ping.log" 2>&1 || true
wait $p || true

# throughput, reliable, 1 KiB, as fast as possible, two subscribers printing every second (-1)
$d -D 7 -1 sub >"$out/ddsperf-$v-lo-tp1k-reliable-2sub-sub-1.log" 2>&1 &
s1=$!
$d -D 7 -1 sub >"$out/ddsperf-$v-lo-tp1k-reliable-2sub-sub-2.log" 2>&1 &
s2=$!; sleep 0.3
$d -D 4 -Qminmatch:2 -Qinitwait:5 pub size 1k >"$out/ddsperf-$v-lo-tp1k-reliable-2sub-pub.log" 2>&1 || true
wait $s1 || true; wait $s2 || true

# throughput, best-effort, 16 KiB at 2000 samples/s, subscriber also reporting latency (-l: "sublat" lines)
$d -u -D 7 -1 -l sub >"$out/ddsperf-$v-lo-tp16k-besteffort-2000hz-sublat-sub-1.log" 2>&1 &
s1=$!; sleep 0.3
$d -u -D 4 -Qminmatch:1 -Qinitwait:5 pub 2000Hz size 16k >"$out/ddsperf-$v-lo-tp16k-besteffort-2000hz-sublat-pub.log" 2>&1 || true
wait $s1 || true
