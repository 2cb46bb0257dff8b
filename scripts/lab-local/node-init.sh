#!/bin/bash
# PID 1 of one node of the local lab (started by lab.sh inside new PID, mount, network, UTS, IPC and cgroup
# namespaces). Gives the node its own /etc, /var/lib, /opt, /usr/local, /root, /home and /var/log (overlays on the
# host's, writes go to the node's state directory), its own /run and /tmp, its own sysfs and cgroup view, a user
# `edgebench` with passwordless sudo (what a Pi lab's inventory user has), sshd with the lab's key, then reaps
# orphans until it is killed; when it exits the kernel kills every process of the node.
set -eu
NODE=$1 STATE=$2 ADDR=$3 PUBKEY=$4 HOSTS=$5 SYSTEMCTL=$6
mount --make-rprivate /
hostname "$NODE"
mount -t proc proc /proc
mount -t tmpfs -o mode=755,size=256m tmpfs /run
mkdir -p /run/lock /run/sshd /run/netns && chmod 1777 /run/lock
mount -t tmpfs -o mode=1777 tmpfs /tmp
for d in etc var/lib opt usr/local root home var/log; do
  o=$STATE/overlay/${d//\//-}
  mkdir -p "$o/upper" "$o/work"
  mount -t overlay overlay -o "lowerdir=/$d,upperdir=$o/upper,workdir=$o/work" "/$d"
done
# what containerd's overlay snapshotter and the kubelet's volumes need under them: a plain directory, not overlayfs
for d in containerd kubelet etcd cni; do
  mkdir -p "$STATE/data/$d" "/var/lib/$d"
  mount --bind "$STATE/data/$d" "/var/lib/$d"
done
# the node's own sysfs (its network devices) and cgroup hierarchies seen from its cgroup namespace
mount -t sysfs sysfs /sys
mount -t tmpfs -o mode=755 cgroup /sys/fs/cgroup
while read -r name opts; do
  mkdir -p "/sys/fs/cgroup/$name"
  if [[ $opts == cgroup2 ]]; then mount -t cgroup2 cgroup2 "/sys/fs/cgroup/$name"
  else mount -t cgroup -o "$opts" cgroup "/sys/fs/cgroup/$name"; fi
done < "$STATE/cgroups"
mount -t bpf bpf /sys/fs/bpf 2>/dev/null || true
# shared mounts, as a systemd host's are: the pods' Bidirectional / HostToContainer mount propagation (cilium's
# /sys/fs/bpf, /run/cilium/cgroupv2, /var/run/netns) needs it, containerd refuses those mounts on a private /. The
# namespace was made private first, so the peer groups made here are the node's own: mounts under it reach the node's
# containers and back, never the host
mount --make-rshared /
# identity
echo "$NODE" > /etc/hostname
printf '127.0.0.1 localhost\n%s\n' "$HOSTS" > /etc/hosts
od -An -N16 -tx1 /dev/urandom | tr -d ' \n' > /etc/machine-id; echo >> /etc/machine-id
rm -f /etc/ssh/ssh_host_*
ssh-keygen -A >/dev/null
cp /etc/ssh/ssh_host_ed25519_key.pub "$STATE/host_ed25519.pub"   # lab.sh pins it in the lab's known_hosts
id edgebench >/dev/null 2>&1 || useradd -m -s /bin/bash edgebench
usermod -p '*' edgebench
install -d -m 700 -o edgebench -g edgebench /home/edgebench/.ssh
echo "$PUBKEY" > /home/edgebench/.ssh/authorized_keys
chown edgebench:edgebench /home/edgebench/.ssh/authorized_keys; chmod 600 /home/edgebench/.ssh/authorized_keys
echo 'edgebench ALL=(ALL) NOPASSWD:ALL' > /etc/sudoers.d/edgebench; chmod 440 /etc/sudoers.d/edgebench
install -m 755 "$SYSTEMCTL" /usr/local/bin/systemctl
mkdir -p /etc/ssh/sshd_config.d
printf 'ListenAddress %s\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nPermitRootLogin no\n' \
  "$ADDR" > /etc/ssh/sshd_config.d/edgebench-lab.conf
# the lab configures eth0 from outside; wait for its address, then serve SSH
for _ in $(seq 1 100); do ip -4 addr show dev eth0 2>/dev/null | grep -q "inet $ADDR/" && break; sleep 0.1; done
/usr/sbin/sshd -D -e >/var/log/sshd.log 2>&1 &
touch "$STATE/ready"
exec /usr/bin/python3 -c '
import os, signal, time
signal.signal(signal.SIGTERM, lambda *a: os._exit(0))
while True:
    try:
        os.waitpid(-1, 0)
    except ChildProcessError:
        time.sleep(1)
'
