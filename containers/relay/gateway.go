package main

// The skeleton every gateway model shares (clusterlink.go, skupper.go): the command's flags, listening (and, on the
// ingress side, reaching the peer before accepting anything), announcing the address, accepting until SIGTERM /
// SIGINT, then closing the listener and whatever the gateway still holds open.

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"log"
	"net"
	"time"
)

const certsUsage = "directory holding ca.pem, tls.pem, tls-key.pem (see: edgebench-relay certs -h)"

// gatewayFlags: the flags of a gateway command: -listen and -certs; an ingress also has -peer and -target.
type gatewayFlags struct {
	listen, peer, target, certs *string
}

// egressFlags defines -listen and -certs on fs.
func egressFlags(fs *flag.FlagSet, listenUsage string) gatewayFlags {
	return gatewayFlags{listen: fs.String("listen", "", listenUsage), certs: fs.String("certs", "", certsUsage)}
}

// ingressFlags defines -listen, -peer, -target and -certs on fs.
func ingressFlags(fs *flag.FlagSet, listenUsage, peerUsage, targetUsage string) gatewayFlags {
	g := egressFlags(fs, listenUsage)
	g.peer = fs.String("peer", "", peerUsage)
	g.target = fs.String("target", "", targetUsage)
	return g
}

func (g gatewayFlags) isIngress() bool { return g.peer != nil }

// parse parses args and checks that every flag of the gateway is given (and -target is HOST:PORT).
func (g gatewayFlags) parse(fs *flag.FlagSet, args []string) error {
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	given := []string{"listen", *g.listen}
	if g.isIngress() {
		given = append(given, "peer", *g.peer, "target", *g.target)
	}
	if err := required(append(given, "certs", *g.certs)...); err != nil {
		return err
	}
	if g.isIngress() {
		if _, _, err := net.SplitHostPort(*g.target); err != nil {
			return fmt.Errorf("-target: %w", err)
		}
	}
	return nil
}

// tlsConfig loads the TLS configuration of -certs: the server side for an egress, the client side towards -peer for
// an ingress.
func (g gatewayFlags) tlsConfig() (*tls.Config, error) {
	server, client, err := tlsConfigs(*g.certs)
	if err != nil {
		return nil, err
	}
	if g.isIngress() {
		return clientFor(client, *g.peer), nil
	}
	return server, nil
}

// gateway: a gateway the CLI starts and serves.
type gateway interface {
	listener() net.Listener // where it accepts, once started
	serve(ctx context.Context)
}

// runGateway is a gateway command's lifecycle: start it (listen; an ingress also reaches its peer) under a context
// cancelled on SIGTERM / SIGINT, print "ready <address>", serve until the signal.
func runGateway(g gateway, start func(ctx context.Context) error) error {
	ctx, stop := serverContext()
	defer stop()
	if err := start(ctx); err != nil {
		return err
	}
	announceReady(g.listener().Addr().String())
	g.serve(ctx)
	return nil
}

// listenThenReach listens on listen, then dials the peer gateway, retrying for peerWait (a gateway accepts nothing
// before its peer answers). When the peer stays unreachable the listener is closed again.
func listenThenReach[T any](ctx context.Context, listen, peer string, dial func(context.Context) (T, error)) (
	net.Listener, T, error) {
	var zero T
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, zero, err
	}
	c, err := retryDial(ctx, peerWait, dial)
	if err != nil {
		ln.Close()
		return nil, zero, fmt.Errorf("peer %s unreachable: %w", peer, err)
	}
	return ln, c, nil
}

// serveUntilDone accepts on ln, each connection handled in its own goroutine, until ctx ends; then it closes ln and
// calls shutdown (which closes what the gateway still holds open: connections, links).
func serveUntilDone(ctx context.Context, ln net.Listener, logger *log.Logger, shutdown func(),
	handle func(net.Conn)) {
	go func() {
		<-ctx.Done()
		ln.Close()
		shutdown()
	}()
	acceptLoop(ln, logger, handle)
}

// acceptLoop accepts until the listener is closed, handing each connection to handle in its own goroutine.
func acceptLoop(ln net.Listener, logger *log.Logger, handle func(net.Conn)) {
	for {
		c, err := ln.Accept()
		if err != nil {
			if isClosedErr(err) {
				return
			}
			// e.g. too many open files: report, back off, keep serving
			logger.Printf("accept: %v", err)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		go handle(c)
	}
}
