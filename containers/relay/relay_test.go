package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
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

// ---------------------------------------------------------------------------------------------- both modes
func TestBulkBothWays(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			addr := m.start(t, echoServer(t))
			data := randomBytes(t, 1<<20)
			got, err := roundTrip(addr, data)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, data) {
				t.Fatalf("echoed %d bytes, not the %d sent (or not byte-exact)", len(got), len(data))
			}
		})
	}
}

func TestKeepAliveRequestResponse(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			addr := m.start(t, echoServer(t))
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(30 * time.Second))
			for i := 0; i < 40; i++ {
				req := randomBytes(t, 1+i*1000) // 1 byte .. 39 kB: small frames, full frames, several frames
				if _, err := c.Write(req); err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				resp := make([]byte, len(req))
				if _, err := io.ReadFull(c, resp); err != nil {
					t.Fatalf("response %d: %v", i, err)
				}
				if !bytes.Equal(req, resp) {
					t.Fatalf("response %d differs", i)
				}
			}
		})
	}
}

func TestConcurrentConnections(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			addr := m.start(t, echoServer(t))
			var wg sync.WaitGroup
			errs := make(chan error, 20)
			for i := 0; i < 20; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					data := randomBytes(t, 64<<10+i*997)
					got, err := roundTrip(addr, data)
					if err == nil && !bytes.Equal(got, data) {
						err = fmt.Errorf("connection %d: %d bytes back, not the %d sent", i, len(got), len(data))
					}
					errs <- err
				}(i)
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// Half-closes travel both ways: the server's FIN reaches the client while the client can still send, and the
// client's FIN reaches the server while the server can still answer.
func TestHalfClose(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			serverGot := make(chan string, 1)
			target := serveTCP(t, func(c *net.TCPConn) {
				_ = c.SetDeadline(time.Now().Add(20 * time.Second))
				c.Write([]byte("banner"))
				c.CloseWrite() // server -> client direction ends first
				b, err := io.ReadAll(c)
				if err != nil {
					serverGot <- "error: " + err.Error()
					return
				}
				serverGot <- string(b)
			})
			addr := m.start(t, target)
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(20 * time.Second))
			b, err := io.ReadAll(c) // ends only if the server's half-close was propagated
			if err != nil || string(b) != "banner" {
				t.Fatalf("client read %q, %v", b, err)
			}
			if _, err := c.Write([]byte("still sending after EOF")); err != nil {
				t.Fatal(err)
			}
			c.(*net.TCPConn).CloseWrite()
			select {
			case got := <-serverGot:
				if got != "still sending after EOF" {
					t.Fatalf("server got %q", got)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the client's half-close did not reach the server")
			}
		})
	}
}

// An undialable target: the application connection is closed without data.
func TestUndialableTarget(t *testing.T) {
	for _, m := range []mode{modes[0], modes[2]} {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			addr := m.start(t, deadAddr(t))
			got, err := roundTrip(addr, []byte("hello"))
			if len(got) != 0 {
				t.Fatalf("got %q from an undialable target", got)
			}
			_ = err // closed, possibly with a reset: either is fine
			// the relay keeps serving: a second connection is handled the same way
			if got, _ := roundTrip(addr, []byte("again")); len(got) != 0 {
				t.Fatalf("got %q", got)
			}
		})
	}
}

// mutual TLS is required on both egress servers: no client certificate, or one from another CA, is refused.
func TestMutualTLSRequired(t *testing.T) {
	server, client := testTLS(t)
	otherDir := t.TempDir()
	if err := writeCerts(otherDir, []net.IP{net.ParseIP("127.0.0.1")}); err != nil {
		t.Fatal(err)
	}
	_, otherClient, err := tlsConfigs(otherDir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sk := &skupperEgress{listen: "127.0.0.1:0", tls: server,
		opts: skupperOpts{maxFrameSize: defaultMaxFrameSize, window: defaultSessionWindow, log: testLogger()}}
	cl := &clusterlinkEgress{listen: "127.0.0.1:0", tls: server, log: testLogger()}
	if err := sk.start(); err != nil {
		t.Fatal(err)
	}
	if err := cl.start(); err != nil {
		t.Fatal(err)
	}
	go sk.serve(ctx)
	go cl.serve(ctx)
	noCert := &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: client.RootCAs, ServerName: "127.0.0.1"}
	wrongCA := otherClient.Clone()
	wrongCA.RootCAs = client.RootCAs // trusts the server, but presents a certificate the server does not trust
	wrongCA.ServerName = "127.0.0.1"
	for _, addr := range []string{sk.ln.Addr().String(), cl.ln.Addr().String()} {
		for name, cfg := range map[string]*tls.Config{"no client certificate": noCert, "untrusted client certificate": wrongCA} {
			c, err := tls.Dial("tcp", addr, cfg)
			if err == nil {
				// TLS 1.3: the client finishes its handshake before the server has checked the client's
				// certificate; the refusal arrives as an alert on the first read
				_ = c.SetDeadline(time.Now().Add(5 * time.Second))
				c.Write([]byte("CONNECT 127.0.0.1:1 HTTP/1.1\r\n\r\n"))
				_, err = c.Read(make([]byte, 1))
				c.Close()
			}
			if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("%s: %s was accepted (%v)", addr, name, err)
			}
		}
		// and a client with the right certificate is accepted
		c, err := tls.Dial("tcp", addr, clientFor(client, addr))
		if err != nil {
			t.Fatalf("%s: a proper client was refused: %v", addr, err)
		}
		c.Close()
	}
}

// ---------------------------------------------------------------------------------------------- ClusterLink
func TestClusterlinkOneTLSConnectionPerApplicationConnection(t *testing.T) {
	addr, eg := startClusterlink(t, echoServer(t))
	// the ingress's startup reachability probe is one TLS connection (counted once the server side completes)
	for deadline := time.Now().Add(5 * time.Second); eg.tlsConns.Load() < 1 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	base := eg.tlsConns.Load()
	if base != 1 {
		t.Fatalf("%d TLS connections for the startup probe, want 1", base)
	}
	for i := 0; i < 5; i++ {
		if got, err := roundTrip(addr, []byte("x")); err != nil || string(got) != "x" {
			t.Fatalf("sequential %d: %q %v", i, got, err)
		}
	}
	var wg sync.WaitGroup
	for i := 0; i < 5; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); roundTrip(addr, []byte("y")) }()
	}
	wg.Wait()
	if n := eg.tlsConns.Load() - base; n != 10 {
		t.Fatalf("%d TLS connections for 10 application connections", n)
	}
}

func TestClusterlinkConnectToUndialableTargetGives502(t *testing.T) {
	server, client := testTLS(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	eg := &clusterlinkEgress{listen: "127.0.0.1:0", tls: server, log: testLogger()}
	if err := eg.start(); err != nil {
		t.Fatal(err)
	}
	go eg.serve(ctx)
	addr := eg.ln.Addr().String()
	c, err := tls.Dial("tcp", addr, clientFor(client, addr))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	dead := deadAddr(t)
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", dead, dead)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("status %q, want 502", resp.Status)
	}
	if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
		t.Fatalf("the connection was not closed after the 502 (read %q, %v)", rest, err)
	}
}

func TestClusterlinkRequestShape(t *testing.T) {
	// the ingress's request, as a plain TLS server sees it
	server, client := testTLS(t)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", server)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	reqs := make(chan *http.Request, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if req, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
					reqs <- req
					io.WriteString(c, "HTTP/1.1 200 OK\r\n\r\n")
					io.Copy(io.Discard, c)
				}
			}()
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	peer := ln.Addr().String()
	in := &clusterlinkIngress{listen: "127.0.0.1:0", peer: peer, target: "10.1.2.3:8080", tls: clientFor(client, peer),
		log: testLogger()}
	if err := in.start(ctx); err != nil {
		t.Fatal(err)
	}
	go in.serve(ctx)
	c, err := net.Dial("tcp", in.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case req := <-reqs:
		if req.Method != http.MethodConnect || req.RequestURI != "10.1.2.3:8080" || req.Host != "10.1.2.3:8080" ||
			req.Header.Get("X-Edgebench-Export") != "10.1.2.3:8080" {
			t.Fatalf("request %s %s Host=%s headers=%v", req.Method, req.RequestURI, req.Host, req.Header)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no CONNECT request")
	}
}

// ---------------------------------------------------------------------------------------------- Skupper
// frameRecorder parses the AMQP frames written on a link connection (after the protocol header).
type frameRecorder struct {
	net.Conn
	mu      sync.Mutex
	pending []byte
	header  bool
	sizes   []int
	codes   []uint64
	bad     []string
}

func (r *frameRecorder) Write(b []byte) (int, error) {
	r.mu.Lock()
	r.pending = append(r.pending, b...)
	if !r.header && len(r.pending) >= 8 {
		if string(r.pending[:8]) != string(amqpProtocolHeader) {
			r.bad = append(r.bad, fmt.Sprintf("protocol header %q", r.pending[:8]))
		}
		r.pending, r.header = r.pending[8:], true
	}
	for r.header && len(r.pending) >= frameHeaderSize {
		size := int(binary.BigEndian.Uint32(r.pending))
		if r.pending[4] != 2 || r.pending[5] != 0 || size < 8 {
			r.bad = append(r.bad, fmt.Sprintf("frame header % x", r.pending[:8]))
			r.pending = nil
			break
		}
		if len(r.pending) < size {
			break
		}
		var code uint64
		if v, _, err := decodeValue(r.pending[8:size]); err != nil {
			r.bad = append(r.bad, err.Error())
		} else if d, ok := v.(described); ok {
			code = d.code
		}
		r.sizes = append(r.sizes, size)
		r.codes = append(r.codes, code)
		r.pending = r.pending[size:]
	}
	r.mu.Unlock()
	return r.Conn.Write(b)
}

func (r *frameRecorder) count(code uint64) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.codes {
		if c == code {
			n++
		}
	}
	return n
}

func recorderHook(out *[]*frameRecorder, mu *sync.Mutex) func(net.Conn) net.Conn {
	return func(c net.Conn) net.Conn {
		r := &frameRecorder{Conn: c}
		mu.Lock()
		*out = append(*out, r)
		mu.Unlock()
		return r
	}
}

func TestSkupperFramesNeverExceedMaxFrameSize(t *testing.T) {
	for _, tc := range []struct {
		frame  int
		window uint32
	}{{defaultMaxFrameSize, defaultSessionWindow}, {1024, 8}, {512, 2}} {
		t.Run(fmt.Sprintf("frame%d-window%d", tc.frame, tc.window), func(t *testing.T) {
			t.Parallel()
			var recs []*frameRecorder
			var mu sync.Mutex
			addr, _ := startSkupper(t, echoServer(t), skupperSetup{frame: tc.frame, window: tc.window,
				wrapIngress: recorderHook(&recs, &mu), wrapEgress: recorderHook(&recs, &mu)})
			data := randomBytes(t, 1<<20)
			var wg sync.WaitGroup
			for i := 0; i < 3; i++ { // a few streams at once, interleaving on the link
				wg.Add(1)
				go func() {
					defer wg.Done()
					if got, err := roundTrip(addr, data); err != nil || !bytes.Equal(got, data) {
						t.Errorf("round trip: %d bytes, %v", len(got), err)
					}
				}()
			}
			wg.Wait()
			mu.Lock()
			defer mu.Unlock()
			if len(recs) != 2 {
				t.Fatalf("%d link connections, want exactly 1 (2 ends)", len(recs)/2)
			}
			for i, r := range recs {
				r.mu.Lock()
				largest, transfers := 0, 0
				for j, size := range r.sizes {
					largest = max(largest, size)
					if size > tc.frame {
						t.Errorf("side %d: a %d-byte frame (code 0x%02x) exceeds max-frame-size %d", i, size, r.codes[j], tc.frame)
					}
					if r.codes[j] == codeTransfer {
						transfers++
					}
				}
				if len(r.bad) > 0 {
					t.Errorf("side %d: malformed: %v", i, r.bad)
				}
				if transfers < (3<<20)/tc.frame || largest < tc.frame*3/4 {
					t.Errorf("side %d: %d transfers, largest frame %d: bulk data should fill frames", i, transfers, largest)
				}
				r.mu.Unlock()
				// when 3 MB takes more frames than one window holds, flow frames must have been sent
				if transfers > int(tc.window) && r.count(codeFlow) == 0 {
					t.Errorf("side %d sent no flow frame", i)
				}
				for _, code := range []uint64{codeOpen, codeBegin, codeAttach, codeDetach} {
					if r.count(code) == 0 {
						t.Errorf("side %d sent no performative 0x%02x", i, code)
					}
				}
			}
		})
	}
}

// fakePeer: a TLS server speaking just enough AMQP to stand in for skupper-egress; it advertises `window` and
// reports the performatives it receives.
func fakePeer(t *testing.T, window uint32) (addr string, frames chan uint64, send func([]byte)) {
	server, _ := testTLS(t)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", server)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	frames = make(chan uint64, 10000)
	conns := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		t.Cleanup(func() { c.Close() })
		hello := append([]byte{}, amqpProtocolHeader...)
		hello = append(hello, encodeFrame(0, perf(codeOpen, "fake", nil, uint32(defaultMaxFrameSize)))...)
		hello = append(hello, encodeFrame(0, perf(codeBegin, uint16(0), uint32(0), window, uint32(math.MaxUint32)))...)
		c.Write(hello)
		io.ReadFull(c, make([]byte, 8))
		conns <- c
		for {
			f, err := readFrame(c, defaultMaxFrameSize, nil)
			if err != nil {
				return
			}
			frames <- f.code
		}
	}()
	return ln.Addr().String(), frames, func(b []byte) {
		select {
		case c := <-conns:
			c.Write(b)
			conns <- c
		case <-time.After(5 * time.Second):
			t.Error("fake peer: no connection")
		}
	}
}

// countTransfers counts the transfer frames arriving until none has come for `quiet`.
func countTransfers(frames chan uint64, quiet time.Duration) int {
	n := 0
	for {
		select {
		case code := <-frames:
			if code == codeTransfer {
				n++
			}
		case <-time.After(quiet):
			return n
		}
	}
}

func TestSkupperSenderBlocksAtSessionWindow(t *testing.T) {
	const window = 4
	peer, frames, send := fakePeer(t, window)
	_, client := testTLS(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr := startSkupperIngress(t, ctx, peer, "10.0.0.1:80", client, skupperSetup{frame: defaultMaxFrameSize, window: 640})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go c.Write(make([]byte, 1<<20)) // far more than 4 frames' worth; blocks once the buffers fill

	if n := countTransfers(frames, 500*time.Millisecond); n != window {
		t.Fatalf("%d transfer frames sent with an incoming-window of %d and no flow frame", n, window)
	}
	// grant 4 more: flow(next-incoming-id 4, incoming-window 4, next-outgoing-id 0, outgoing-window max)
	send(encodeFrame(0, perf(codeFlow, uint32(window), uint32(window), uint32(0), uint32(math.MaxUint32))))
	if n := countTransfers(frames, 500*time.Millisecond); n != window {
		t.Fatalf("%d more transfer frames after a flow granting %d", n, window)
	}
	// a larger grant
	send(encodeFrame(0, perf(codeFlow, uint32(2*window), uint32(10), uint32(0), uint32(math.MaxUint32))))
	if n := countTransfers(frames, 500*time.Millisecond); n != 10 {
		t.Fatalf("%d more transfer frames after a flow granting 10", n)
	}
}

func TestSkupperOneLinkForManyConnections(t *testing.T) {
	var links atomic.Int64
	addr, _ := startSkupper(t, echoServer(t), skupperSetup{wrapEgress: func(c net.Conn) net.Conn { links.Add(1); return c }})
	var wg sync.WaitGroup
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); roundTrip(addr, []byte("z")) }()
	}
	wg.Wait()
	if n := links.Load(); n != 1 {
		t.Fatalf("%d link connections for 10 application connections, want 1", n)
	}
}

// A stream aborted on one side (the client resets its connection) does not disturb the others.
func TestSkupperStreamErrorClosesOnlyThatStream(t *testing.T) {
	addr, _ := startSkupper(t, echoServer(t), skupperSetup{})
	keep, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer keep.Close()
	_ = keep.SetDeadline(time.Now().Add(20 * time.Second))
	ping := func() {
		t.Helper()
		keep.Write([]byte("ping"))
		b := make([]byte, 4)
		if _, err := io.ReadFull(keep, b); err != nil || string(b) != "ping" {
			t.Fatalf("the other stream broke: %q %v", b, err)
		}
	}
	ping()
	for i := 0; i < 5; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.Write(randomBytes(t, 100000))
		c.(*net.TCPConn).SetLinger(0) // close with a reset
		c.Close()
	}
	time.Sleep(200 * time.Millisecond)
	ping()
}

// ---------------------------------------------------------------------------------------------- AMQP encoding
func TestTransferFrameBytes(t *testing.T) {
	lay := newTransferLayout(0, 0, 512)
	buf := make([]byte, 512)
	copy(buf[lay.payloadOff:], "hi")
	f := lay.frame(buf, 2, 0)
	want := []byte{
		0, 0, 0, 0, 2, 0, 0, 0, // SIZE (filled below), DOFF 2, TYPE 0, CHANNEL 0
		0x00, 0x53, 0x14, // transfer
		0xc0, 16, 6, // list8: size 16, 6 fields
		0x43,                            // handle uint0
		0x43,                            // delivery-id uint0
		0xa0, 8, 0, 0, 0, 0, 0, 0, 0, 0, // delivery-tag vbin8, 8 bytes
		0x43,             // message-format 0
		0x42,             // settled false
		0x41,             // more true
		0x00, 0x53, 0x75, // data section
		0xa0, 2, 'h', 'i', // vbin8
	}
	binary.BigEndian.PutUint32(want, uint32(len(want)))
	if !bytes.Equal(f, want) {
		t.Fatalf("transfer frame\n got % x\nwant % x", f, want)
	}
	// the frame parses back
	fr, err := readFrame(bytes.NewReader(f), 512, nil)
	if err != nil || fr.code != codeTransfer || string(fr.payload) != "hi" || !fr.boolField(5) {
		t.Fatalf("parsed %+v %v", fr, err)
	}
	// a payload of 256+ bytes takes a vbin32
	big := make([]byte, 512)
	f = lay.frame(big, lay.maxPayload, 0)
	if len(f) != 512 || f[lay.payloadOff-5] != 0xb0 {
		t.Fatalf("full frame: %d bytes, section type 0x%02x", len(f), f[lay.payloadOff-5])
	}
	fr, err = readFrame(bytes.NewReader(f), 512, nil)
	if err != nil || len(fr.payload) != lay.maxPayload {
		t.Fatalf("full frame: %v, payload %d", err, len(fr.payload))
	}
}

func TestPerformativeRoundTrip(t *testing.T) {
	long := strings.Repeat("a", 300) // forces list32 and str32
	frm := encodeFrame(3, perf(codeAttach, long, uint32(70000), false, nil, nil, nil,
		described{codeTarget, []any{"10.0.0.1:8080"}}, nil, nil, uint32(0)))
	if frm[11] != 0xd0 {
		t.Fatalf("a 300-byte field should make a list32, got 0x%02x", frm[11])
	}
	f, err := readFrame(bytes.NewReader(frm), 1024, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := f.uintField(1)
	if f.channel != 3 || f.code != codeAttach || f.stringField(0) != long || h != 70000 || f.boolField(2) ||
		f.terminusAddress(6) != "10.0.0.1:8080" {
		t.Fatalf("attach round trip: %+v", f)
	}
	d := encodeFrame(0, perf(codeDetach, uint32(5), true, described{codeError, []any{symbol("amqp:internal-error"), "boom"}}))
	f, err = readFrame(bytes.NewReader(d), 1024, nil)
	if err != nil || f.errorCondition(2) != "amqp:internal-error: boom" {
		t.Fatalf("detach error: %q %v", f.errorCondition(2), err)
	}
	if _, err := readFrame(bytes.NewReader(frm), 64, nil); err == nil {
		t.Fatal("a frame larger than max-frame-size was accepted")
	}
}

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
