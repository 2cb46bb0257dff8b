package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"io"
	"log"
	"net"
	"os"
	"sync"
	"testing"
	"time"
)

// ---------------------------------------------------------------------------------------------- fixtures
var (
	certsOnce sync.Once
	certsDir  string
	certsErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if certsDir != "" {
		os.RemoveAll(certsDir)
	}
	os.Exit(code)
}

// testTLS: server and client configurations from one throw-away CA (written once per test binary).
func testTLS(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	certsOnce.Do(func() {
		if certsDir, certsErr = os.MkdirTemp("", "relay-certs"); certsErr == nil {
			certsErr = writeCerts(certsDir, []net.IP{net.ParseIP("127.0.0.1")})
		}
	})
	if certsErr != nil {
		t.Fatal(certsErr)
	}
	server, client, err := tlsConfigs(certsDir)
	if err != nil {
		t.Fatal(err)
	}
	return server, client
}

func testLogger() *log.Logger {
	if testing.Verbose() {
		return log.New(os.Stderr, "[relay] ", log.Lmicroseconds)
	}
	return log.New(io.Discard, "", 0)
}

// serveTCP runs handle for every connection accepted on 127.0.0.1:0 until the test ends.
func serveTCP(t *testing.T, handle func(*net.TCPConn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns tracker
	t.Cleanup(func() { ln.Close(); conns.closeAll() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if conns.add(c) {
				go func() { defer conns.remove(c); defer c.Close(); handle(c.(*net.TCPConn)) }()
			}
		}
	}()
	return ln.Addr().String()
}

// echoServer: writes back what it reads; half-closes when the client has.
func echoServer(t *testing.T) string {
	return serveTCP(t, func(c *net.TCPConn) {
		if _, err := io.Copy(c, c); err == nil {
			c.CloseWrite()
		}
	})
}

// a port nothing listens on
func deadAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

type skupperSetup struct {
	frame        int
	window       uint32
	wrapIngress  func(net.Conn) net.Conn
	wrapEgress   func(net.Conn) net.Conn
	egressWindow uint32 // 0: same as window
}

// startSkupper: an egress and an ingress relaying to target; returns the ingress's application address.
func startSkupper(t *testing.T, target string, cfg skupperSetup) (string, *skupperEgress) {
	t.Helper()
	if cfg.frame == 0 {
		cfg.frame = defaultMaxFrameSize
	}
	if cfg.window == 0 {
		cfg.window = defaultSessionWindow
	}
	if cfg.egressWindow == 0 {
		cfg.egressWindow = cfg.window
	}
	server, client := testTLS(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	eg := &skupperEgress{listen: "127.0.0.1:0", tls: server,
		opts: skupperOpts{maxFrameSize: cfg.frame, window: cfg.egressWindow, wrap: cfg.wrapEgress, log: testLogger()}}
	if err := eg.start(); err != nil {
		t.Fatal(err)
	}
	go eg.serve(ctx)
	peer := eg.ln.Addr().String()
	return startSkupperIngress(t, ctx, peer, target, client, cfg), eg
}

func startSkupperIngress(t *testing.T, ctx context.Context, peer, target string, client *tls.Config, cfg skupperSetup) string {
	t.Helper()
	in := &skupperIngress{listen: "127.0.0.1:0", peer: peer, target: target, tls: clientFor(client, peer),
		opts: skupperOpts{maxFrameSize: cfg.frame, window: cfg.window, wrap: cfg.wrapIngress, log: testLogger()}}
	if err := in.start(ctx); err != nil {
		t.Fatal(err)
	}
	go in.serve(ctx)
	return in.ln.Addr().String()
}

// startClusterlink: an egress and an ingress relaying to target.
func startClusterlink(t *testing.T, target string) (string, *clusterlinkEgress) {
	t.Helper()
	server, client := testTLS(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	eg := &clusterlinkEgress{listen: "127.0.0.1:0", tls: server, log: testLogger()}
	if err := eg.start(); err != nil {
		t.Fatal(err)
	}
	go eg.serve(ctx)
	peer := eg.ln.Addr().String()
	in := &clusterlinkIngress{listen: "127.0.0.1:0", peer: peer, target: target, tls: clientFor(client, peer),
		log: testLogger()}
	if err := in.start(ctx); err != nil {
		t.Fatal(err)
	}
	go in.serve(ctx)
	return in.ln.Addr().String(), eg
}

type mode struct {
	name  string
	start func(t *testing.T, target string) string
}

var modes = []mode{
	{"skupper", func(t *testing.T, target string) string { a, _ := startSkupper(t, target, skupperSetup{}); return a }},
	{"skupper-small-window-and-frames", func(t *testing.T, target string) string {
		a, _ := startSkupper(t, target, skupperSetup{frame: 512, window: 4})
		return a
	}},
	{"clusterlink", func(t *testing.T, target string) string { a, _ := startClusterlink(t, target); return a }},
}

func randomBytes(t *testing.T, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// roundTrip sends data through addr to the echo server, half-closes, and returns everything read back.
func roundTrip(addr string, data []byte) ([]byte, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	werr := make(chan error, 1)
	go func() {
		_, err := c.Write(data)
		if err == nil {
			err = c.(*net.TCPConn).CloseWrite()
		}
		werr <- err
	}()
	got, err := io.ReadAll(c)
	if err != nil {
		return got, err
	}
	return got, <-werr
}
