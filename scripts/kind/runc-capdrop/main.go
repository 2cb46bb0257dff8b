// Command runc-capdrop is an OCI runtime in front of runc that removes from a container's capability sets the
// capabilities this process cannot grant, i.e. those missing from its own bounding AND permitted sets, then execs
// the real runc.
//
// Why: on this machine the capability bounding set lacks CAP_SYS_RESOURCE (CapBnd 000001fffeffffff). Docker 20.10
// (Debian's docker.io) fills a --privileged container's bounding/effective/permitted sets from the list of
// capabilities the KERNEL knows (cap_last_cap), not from the ones the daemon has, and runc then fails in capset(2):
// "unable to apply caps: operation not permitted". Docker >= 23 (oci/caps: ccaps.Current()), podman (BoundingSet())
// and containerd's CRI (oci.WithAllCurrentCapabilities) already use the current process's capabilities; this
// wrapper makes dockerd 20.10 behave the same. A capability the table below does not name (a newer kernel's) is
// left alone: runc >= 1.1 ignores capabilities it does not know.
//
// Rewritten: `create`/`run` (the bundle's config.json, .process.capabilities) and `exec` (the --process JSON file,
// .capabilities). Everything else (start, kill, delete, state, --version, ...) goes to runc unchanged. A file that
// cannot be rewritten (not JSON, say) is said on stderr and handed to runc as it is.
//
// Register with dockerd (daemon.json):
//
//	"runtimes": {"edgebench-runc": {"path": "/usr/local/lib/edgebench/runc-capdrop"}},
//	"default-runtime": "edgebench-runc"
//
// and with containerd (a kind node's /etc/containerd/config.toml, the CRI runc runtime):
//
//	[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
//	  BinaryName = "/usr/local/sbin/runc-capdrop"
//
// Environment: RUNC_CAPDROP_RUNC (the real runc; default: the first runc on PATH that is not this program, else
// /usr/sbin/runc, ...), RUNC_CAPDROP_LOG (append one line per rewrite to this file; default: none).
//
// It was a bash script with jq (scripts/kind/runc-capdrop before issue 45); this is the same program, static
// (CGO_ENABLED=0, standard library only), built by scripts/kind/kindlib.py's capdrop_bin.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// capNames are the capabilities 0..40 (linux/capability.h, kernel 5.9+), by number.
var capNames = []string{"CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID",
	"SETPCAP", "LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST", "NET_ADMIN", "NET_RAW", "IPC_LOCK",
	"IPC_OWNER", "SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT", "SYS_ADMIN", "SYS_BOOT",
	"SYS_NICE", "SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG", "MKNOD", "LEASE", "AUDIT_WRITE", "AUDIT_CONTROL",
	"SETFCAP", "MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG", "WAKE_ALARM", "BLOCK_SUSPEND", "AUDIT_READ", "PERFMON", "BPF",
	"CHECKPOINT_RESTORE"}

func main() {
	args := os.Args[1:]
	runc, err := realRunc()
	if err != nil {
		fmt.Fprintln(os.Stderr, "runc-capdrop: no runc found (set RUNC_CAPDROP_RUNC)")
		os.Exit(127)
	}
	status, err := os.ReadFile("/proc/self/status")
	var missing []string
	if err == nil {
		missing, err = missingCaps(string(status))
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "runc-capdrop: %v; passing the command to runc unchanged\n", err)
	}
	cmd, i := subcommand(args)
	switch cmd {
	case "create", "run":
		bundle := optValue(args, i, "bundle", "b")
		if bundle == "" {
			bundle = "."
		}
		rewrite(bundle+"/config.json", []string{"process", "capabilities"}, missing, cmd)
	case "exec":
		if process := optValue(args, i, "process", "p"); process != "" {
			rewrite(process, []string{"capabilities"}, missing, cmd)
		}
	}
	err = syscall.Exec(runc, append([]string{runc}, args...), os.Environ())
	fmt.Fprintf(os.Stderr, "runc-capdrop: %s: %v\n", runc, err)
	if errors.Is(err, syscall.ENOENT) {
		os.Exit(127)
	}
	os.Exit(126)
}

// realRunc is RUNC_CAPDROP_RUNC, else the first runc on PATH that is not this program, else the first executable
// of /usr/sbin/runc, /usr/bin/runc, /usr/local/sbin/runc, /usr/local/bin/runc that is not this program.
func realRunc() (string, error) {
	if r := os.Getenv("RUNC_CAPDROP_RUNC"); r != "" {
		if !strings.Contains(r, "/") { // a bare name, as bash's `exec NAME` looks it up
			if p, err := exec.LookPath(r); err == nil {
				return p, nil
			}
		}
		return r, nil
	}
	self := resolved("/proc/self/exe")
	var candidates []string
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if dir == "" {
			dir = "."
		}
		candidates = append(candidates, filepath.Join(dir, "runc"))
	}
	candidates = append(candidates, "/usr/sbin/runc", "/usr/bin/runc", "/usr/local/sbin/runc", "/usr/local/bin/runc")
	for _, c := range candidates {
		if executable(c) && resolved(c) != self {
			return c, nil
		}
	}
	return "", errors.New("no runc")
}

func resolved(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		if abs, err := filepath.Abs(r); err == nil {
			return abs
		}
	}
	return p
}

func executable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && syscall.Access(p, 1) == nil // X_OK
}

// missingCaps names the capabilities of capNames that are not in both CapBnd and CapPrm of a /proc/PID/status text.
func missingCaps(status string) ([]string, error) {
	masks := map[string]uint64{}
	for _, line := range strings.Split(status, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && (k == "CapBnd" || k == "CapPrm") {
			m, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return nil, fmt.Errorf("%s in /proc/self/status: %v", k, err)
			}
			masks[k] = m
		}
	}
	bnd, ok1 := masks["CapBnd"]
	prm, ok2 := masks["CapPrm"]
	if !ok1 || !ok2 {
		return nil, errors.New("no CapBnd or CapPrm in /proc/self/status")
	}
	have := bnd & prm
	missing := []string{}
	for i, n := range capNames {
		if have>>uint(i)&1 == 0 {
			missing = append(missing, "CAP_"+n)
		}
	}
	return missing, nil
}

// subcommand finds runc's command: its global options come first, those taking a value skipped with it. The
// command and its index (len(args) when there is none).
func subcommand(args []string) (string, int) {
	i := 0
	for i < len(args) {
		a := args[i]
		switch {
		case a == "--root" || a == "--log" || a == "--log-format" || a == "--criu" || a == "--rootless":
			i += 2
		case strings.HasPrefix(a, "--") && strings.Contains(a[2:], "=") || a == "--debug" || a == "--systemd-cgroup":
			i++
		case strings.HasPrefix(a, "-"):
			i++
		default:
			return a, i
		}
	}
	return "", i
}

// optValue is the value of option LONG (--LONG X, -LONG X, --LONG=X, -LONG=X) or SHORT (-S X) after the command
// at index I; "" when it is not given.
func optValue(args []string, i int, long, short string) string {
	next := func(j int) string {
		if j+1 < len(args) {
			return args[j+1]
		}
		return ""
	}
	for j := i + 1; j < len(args); j++ {
		a := args[j]
		switch {
		case a == "--"+long || a == "-"+long:
			return next(j)
		case strings.HasPrefix(a, "--"+long+"=") || strings.HasPrefix(a, "-"+long+"="):
			_, v, _ := strings.Cut(a, "=")
			return v
		case short != "" && a == "-"+short:
			return next(j)
		}
	}
	return ""
}

// rewrite drops the MISSING capabilities from every set (bounding, effective, inheritable, permitted, ambient) of
// the object at PATH in the JSON FILE, in place: a temporary file beside it with FILE's mode, then a rename. Nothing
// when nothing is missing or FILE is not a regular file; a failure is said and FILE left as it was.
func rewrite(file string, path []string, missing []string, cmd string) {
	if len(missing) == 0 {
		return
	}
	st, err := os.Stat(file)
	if err != nil || !st.Mode().IsRegular() {
		return
	}
	if err := rewriteFile(file, st.Mode().Perm(), path, missing); err != nil {
		fmt.Fprintf(os.Stderr, "runc-capdrop: could not rewrite %s (%v); passing it to runc unchanged\n", file, err)
		return
	}
	if logf := os.Getenv("RUNC_CAPDROP_LOG"); logf != "" {
		drop, _ := json.Marshal(missing)
		line := fmt.Sprintf("%s %s %s: dropped %s\n", time.Now().UTC().Format("2006-01-02T15:04:05Z"), cmd, file, drop)
		if f, err := os.OpenFile(logf, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o666); err == nil {
			f.WriteString(line)
			f.Close()
		}
	}
}

func rewriteFile(file string, mode os.FileMode, path []string, missing []string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	out, err := dropCaps(data, path, missing)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), filepath.Base(file)+".capdrop.")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // nothing once renamed
	if _, err := tmp.Write(out); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	os.Chmod(tmp.Name(), mode)
	return os.Rename(tmp.Name(), file)
}
