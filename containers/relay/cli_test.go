package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// ---------------------------------------------------------------------------------------------- CLI
func TestCLIValidation(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"-listen", "127.0.0.1:0", "-peer", "127.0.0.1:1", "-certs", "x"}, // no -target
		{"-listen", "127.0.0.1:0", "-peer", "127.0.0.1:1", "-target", "nohostport", "-certs", "x"},
		{"-listen", "127.0.0.1:0", "-peer", "127.0.0.1:1", "-target", "a:1", "-certs", "x", "-max-frame-size", "100"},
		{"-listen", "127.0.0.1:0", "-peer", "127.0.0.1:1", "-target", "a:1", "-certs", "x", "-session-window", "0"},
		{"-bogus"},
	} {
		if err := runSkupperIngress(args); err == nil {
			t.Errorf("skupper-ingress %v: no error", args)
		}
	}
	if err := runCerts([]string{"-dir", t.TempDir(), "-ip", "not-an-ip"}); err == nil {
		t.Error("certs accepted a bad IP")
	}
	dir := t.TempDir()
	if err := runCerts([]string{"-dir", dir, "-ip", "10.0.0.1,10.0.0.2"}); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(dir + "/" + keyFile); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", st, err)
	}
	if _, _, err := tlsConfigs(dir); err != nil {
		t.Fatal(err)
	}
}

func TestIngressFailsWhenPeerUnreachable(t *testing.T) {
	t.Parallel()
	_, client := testTLS(t)
	start := time.Now()
	in := &skupperIngress{listen: "127.0.0.1:0", peer: deadAddr(t), target: "10.0.0.1:80", tls: client,
		opts: skupperOpts{maxFrameSize: defaultMaxFrameSize, window: defaultSessionWindow, log: testLogger()}}
	err := in.start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("start: %v", err)
	}
	if d := time.Since(start); d < 4*time.Second || d > 8*time.Second {
		t.Fatalf("gave up after %s, want ~5 s", d)
	}
}
