package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

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
