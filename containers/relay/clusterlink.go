package main

// The ClusterLink model: one NEW mutual-TLS connection between the gateways per application connection.
//
// WHAT IS MODELLED. ClusterLink's dataplane carries each application connection over its own TLS connection to
// the peer gateway: the importing side accepts the application's TCP connection, dials the peer dataplane (a
// full TLS handshake with client certificates - no session resumption), sends ONE HTTP/1.1 request naming what
// it wants to reach, waits for "200 OK", and from then on the TLS connection carries the raw application bytes
// both ways until either side closes. The exporting side terminates TLS, reads the request, dials the service,
// answers and splices. So the per-connection cost is: TCP handshake + TLS 1.3 handshake (1 RTT, ECDSA
// signatures on both sides) + one request/response RTT, before the first application byte; the per-byte cost is
// TLS record encryption on both gateways.
//
// Here the request is `CONNECT host:port HTTP/1.1` (with Host and X-Edgebench-Export headers), the answer
// `HTTP/1.1 200 OK`, or `502 Bad Gateway` (then close) when the target cannot be dialled.
//
// WHAT IS NOT MODELLED: ClusterLink's Go dataplane sends a POST carrying a JWT in an authorization header, which
// each side obtains from / checks with its control plane over a local HTTPS request per connection (egress and
// ingress authorization, access policies); those are round trips inside each gateway's cluster, not between
// the gateways, and are left out. Its Envoy-based dataplane differs in implementation, not in this mechanism.
// There is no SNI-based proxy in front of the dataplane (ClusterLink multiplexes its control plane and
// dataplane on port 443 by SNI).

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// ---------------------------------------------------------------------------------------------- egress
type clusterlinkEgress struct {
	listen   string
	tls      *tls.Config
	log      *log.Logger
	ln       net.Listener
	conns    tracker
	tlsConns atomic.Int64 // TLS handshakes completed (tests count connections with it)
}

func (s *clusterlinkEgress) start() (err error) {
	s.ln, err = net.Listen("tcp", s.listen)
	return err
}

func (s *clusterlinkEgress) listener() net.Listener { return s.ln }

func (s *clusterlinkEgress) serve(ctx context.Context) {
	serveUntilDone(ctx, s.ln, s.log, s.conns.closeAll, func(c net.Conn) { s.handle(ctx, c) })
}

func (s *clusterlinkEgress) handle(ctx context.Context, c net.Conn) {
	tc := tls.Server(c, s.tls)
	if !s.conns.add(tc) {
		return
	}
	defer s.conns.remove(tc)
	defer tc.Close()
	// the handshake and the request must arrive within handshakeTimeout
	_ = tc.SetDeadline(time.Now().Add(handshakeTimeout))
	if err := tc.HandshakeContext(ctx); err != nil {
		s.log.Printf("peer %s: TLS handshake failed: %v", c.RemoteAddr(), err)
		return
	}
	s.tlsConns.Add(1)
	br := bufio.NewReader(tc)
	req, err := http.ReadRequest(br)
	if err != nil {
		if !errors.Is(err, io.EOF) { // a bare connect-and-close is a reachability probe
			s.log.Printf("peer %s: reading the request: %v", c.RemoteAddr(), err)
		}
		return
	}
	if req.Method != http.MethodConnect {
		_, _ = io.WriteString(tc, "HTTP/1.1 405 Method Not Allowed\r\nAllow: CONNECT\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		return
	}
	target := req.RequestURI // CONNECT's request target is "host:port"
	dialer := net.Dialer{Timeout: dialTimeout}
	app, err := dialer.DialContext(ctx, "tcp", target)
	if err != nil {
		s.log.Printf("peer %s: CONNECT %s: %v", c.RemoteAddr(), target, err)
		_, _ = io.WriteString(tc, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		return
	}
	_ = tc.SetDeadline(time.Time{})
	// the same status line and header ClusterLink's dataplane writes after hijacking the connection
	if _, err := io.WriteString(tc, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n"); err != nil {
		app.Close()
		return
	}
	splice(tc, app, br, nil)
}

// ---------------------------------------------------------------------------------------------- ingress
type clusterlinkIngress struct {
	listen, peer, target string
	tls                  *tls.Config // client side; ServerName set from peer
	log                  *log.Logger
	ln                   net.Listener
	conns                tracker
}

// start listens, then checks that the peer answers a TLS handshake (retrying for peerWait).
func (s *clusterlinkIngress) start(ctx context.Context) error {
	ln, probe, err := listenThenReach(ctx, s.listen, s.peer, s.dialPeer)
	if err != nil {
		return err
	}
	s.ln = ln
	probe.Close()
	return nil
}

// dialPeer opens a new TCP + TLS connection to the peer gateway (a full handshake every time).
func (s *clusterlinkIngress) dialPeer(ctx context.Context) (*tls.Conn, error) {
	d := tls.Dialer{NetDialer: &net.Dialer{Timeout: dialTimeout}, Config: s.tls}
	c, err := d.DialContext(ctx, "tcp", s.peer)
	if err != nil {
		return nil, err
	}
	return c.(*tls.Conn), nil
}

func (s *clusterlinkIngress) listener() net.Listener { return s.ln }

func (s *clusterlinkIngress) serve(ctx context.Context) {
	serveUntilDone(ctx, s.ln, s.log, s.conns.closeAll, func(c net.Conn) { s.handle(ctx, c) })
}

func (s *clusterlinkIngress) handle(ctx context.Context, app net.Conn) {
	if !s.conns.add(app) {
		return
	}
	defer s.conns.remove(app)
	peer, err := s.dialPeer(ctx)
	if err != nil {
		s.log.Printf("client %s: connecting to the peer %s: %v", app.RemoteAddr(), s.peer, err)
		app.Close()
		return
	}
	if !s.conns.add(peer) {
		app.Close()
		return
	}
	defer s.conns.remove(peer)
	req := fmt.Sprintf("CONNECT %s HTTP/1.1\r\nHost: %s\r\nX-Edgebench-Export: %s\r\n\r\n", s.target, s.target, s.target)
	_ = peer.SetDeadline(time.Now().Add(handshakeTimeout))
	br := bufio.NewReader(peer)
	var resp *http.Response
	if _, err = io.WriteString(peer, req); err == nil {
		resp, err = http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	}
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("the peer answered %q", resp.Status)
	}
	if err != nil {
		s.log.Printf("client %s: CONNECT %s via %s: %v", app.RemoteAddr(), s.target, s.peer, err)
		app.Close()
		peer.Close()
		return
	}
	_ = peer.SetDeadline(time.Time{})
	splice(app, peer, nil, br)
}

// ---------------------------------------------------------------------------------------------- CLI
func runClusterlinkEgress(args []string) error {
	fs := newFlags("clusterlink-egress", "-listen IP:4443 -certs D",
		"ClusterLink model, the gateway of the cluster that exports the service. Accepts mutual-TLS connections\n"+
			"(client certificate required, verified against D/ca.pem); on each reads `CONNECT host:port HTTP/1.1`,\n"+
			"dials host:port, answers `HTTP/1.1 200 OK` (`502 Bad Gateway` and close if the dial fails) and then\n"+
			"relays bytes both ways, half-closes included.")
	flags := egressFlags(fs, "address to accept peer gateways on (ClusterLink uses port 443; e.g. IP:4443)")
	if err := flags.parse(fs, args); err != nil {
		return err
	}
	server, err := flags.tlsConfig()
	if err != nil {
		return err
	}
	s := &clusterlinkEgress{listen: *flags.listen, tls: server, log: newLogger("clusterlink-egress")}
	return runGateway(s, func(context.Context) error { return s.start() })
}

func runClusterlinkIngress(args []string) error {
	fs := newFlags("clusterlink-ingress", "-listen IP:PORT -peer IP:4443 -target HOST:PORT -certs D",
		"ClusterLink model, the gateway of the cluster that imports the service. Accepts application TCP\n"+
			"connections on -listen; for EVERY one opens a NEW mutual-TLS connection to -peer (a full TLS 1.3\n"+
			"handshake), sends `CONNECT <target> HTTP/1.1`, waits for 200 and relays bytes both ways.\n"+
			"Startup fails if the peer does not complete a TLS handshake within 5 s.")
	flags := ingressFlags(fs, "address applications connect to (the imported service's address)",
		"the peer gateway's clusterlink-egress address (IP:PORT)",
		"the exported service, as the peer gateway dials it (HOST:PORT)")
	if err := flags.parse(fs, args); err != nil {
		return err
	}
	client, err := flags.tlsConfig()
	if err != nil {
		return err
	}
	s := &clusterlinkIngress{listen: *flags.listen, peer: *flags.peer, target: *flags.target, tls: client,
		log: newLogger("clusterlink-ingress")}
	return runGateway(s, s.start)
}
