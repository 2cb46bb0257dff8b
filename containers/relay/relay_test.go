package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"
)

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
