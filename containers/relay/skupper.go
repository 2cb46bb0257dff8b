package main

// The Skupper model: application connections multiplexed over ONE long-lived AMQP 1.0 link between the gateways.
//
// WHAT IS MODELLED (the mapping to skupper-router):
//
//   - The link. skupper-router instances connect with an inter-router connection: one mutual-TLS connection to
//     the peer's port 55671, opened when the sites are linked - long before any application traffic - and kept.
//     skupper-ingress opens it at startup (and re-opens it if it drops); skupper-egress accepts it. Over it:
//     AMQP protocol header, open (max-frame-size) and begin (session incoming-window), as in amqp.go.
//   - Streams. skupper-router's TCP adaptor turns each accepted TCP connection into a pair of streamed AMQP
//     deliveries, one per direction, each on its own link attached on the shared connection. Here: for each
//     application connection skupper-ingress attaches a sender link (handle h, target address = the service's
//     "host:port"); skupper-egress dials that target and attaches its own sender link with the same handle number
//     for the reply direction (handles are per-endpoint in AMQP, so the numbers do not collide). Each direction is
//     one delivery streamed as transfer frames with more=true; its end (the application's half-close) is a final
//     transfer with more=false followed by detach(closed=true), which the other side turns into a TCP half-close.
//     A detach carrying an error aborts the whole stream (the other side closes its TCP connection).
//   - Framing. Bytes read from an application socket are cut into transfer frames of at most max-frame-size bytes
//     including all headers (default 16384, skupper-router's default); each read of the socket becomes one frame
//     (a bulk transfer fills frames; a small request is one small frame).
//   - Session flow control. All streams share one session window of -session-window frames (default 640,
//     skupper-router's maxSessionFrames): a sender stops sending transfer frames once that many are outstanding -
//     received by the peer but not yet consumed, i.e. not yet written to the application socket - and waits for
//     a flow frame. The receiver sends a flow frame (next-incoming-id, incoming-window, ...) each time it has
//     consumed half the window since the previous one. So one slow application can hold part of the shared
//     window, as in the real router.
//   - Concurrency: frames of different streams interleave freely on the link (one writer at a time).
//
// WHAT IS NOT MODELLED: SASL, link credit and dispositions, message sections other than data, router-to-router
// routing and address propagation, multi-hop paths, the router's internal buffer management (Q2/Q3 holdoffs),
// priority links, heartbeats, and its threading model. The ingress does not wait for the egress's dial of the
// target: bytes sent before it completes are held at the egress (within the session window).

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"sync/atomic"
	"time"
)

type skupperOpts struct {
	maxFrameSize int                     // the largest frame we accept (advertised in open); we send min(ours, peer's)
	window       uint32                  // our session incoming-window in frames (advertised in begin)
	wrap         func(net.Conn) net.Conn // tests: observe the link's plaintext bytes
	log          *log.Logger
}

var errLinkClosed = errors.New("link closed")

// ---------------------------------------------------------------------------------------------- egress
type skupperEgress struct {
	listen string
	tls    *tls.Config
	opts   skupperOpts
	ln     net.Listener
	links  tracker
	ctx    context.Context
}

func (s *skupperEgress) start() (err error) {
	s.ln, err = net.Listen("tcp", s.listen)
	return err
}

func (s *skupperEgress) listener() net.Listener { return s.ln }

func (s *skupperEgress) serve(ctx context.Context) {
	s.ctx = ctx
	serveUntilDone(ctx, s.ln, s.opts.log, s.links.closeAll, s.handle)
}

func (s *skupperEgress) handle(c net.Conn) {
	tc := tls.Server(c, s.tls)
	_ = tc.SetDeadline(time.Now().Add(handshakeTimeout))
	if err := tc.HandshakeContext(s.ctx); err != nil {
		s.opts.log.Printf("peer %s: TLS handshake failed: %v", c.RemoteAddr(), err)
		tc.Close()
		return
	}
	l, err := openLink(tc, s.opts, "egress", s.dialStream)
	if err != nil {
		s.opts.log.Printf("peer %s: opening the link: %v", c.RemoteAddr(), err)
		tc.Close()
		return
	}
	if !s.links.add(l) {
		return
	}
	s.opts.log.Printf("link from %s up", c.RemoteAddr())
	<-l.closed
	s.links.remove(l)
	if s.ctx.Err() == nil {
		s.opts.log.Printf("link from %s down: %v", c.RemoteAddr(), l.err)
	}
}

// dialStream: the peer attached a stream: dial its target, attach the reply direction, start relaying.
func (s *skupperEgress) dialStream(st *stream) {
	d := net.Dialer{Timeout: dialTimeout}
	c, err := d.DialContext(s.ctx, "tcp", st.target)
	if err != nil {
		st.abort(fmt.Errorf("dial %s: %w", st.target, err), local)
		return
	}
	if !st.setConn(c) {
		return
	}
	if err := st.l.sendAttach(st.handle, st.target); err != nil {
		return // the link failed: fail() aborts the stream
	}
	go st.pump()
}

// ---------------------------------------------------------------------------------------------- ingress
type skupperIngress struct {
	listen, peer, target string
	tls                  *tls.Config // client side; ServerName set from peer
	opts                 skupperOpts
	ln                   net.Listener
	cur                  atomic.Pointer[link]
}

// start listens and establishes the link (retrying for peerWait), as a Skupper link exists before any traffic.
func (s *skupperIngress) start(ctx context.Context) error {
	ln, l, err := listenThenReach(ctx, s.listen, s.peer, s.connect)
	if err != nil {
		return err
	}
	s.ln = ln
	s.cur.Store(l)
	return nil
}

func (s *skupperIngress) connect(ctx context.Context) (*link, error) {
	d := tls.Dialer{NetDialer: &net.Dialer{Timeout: dialTimeout}, Config: s.tls}
	c, err := d.DialContext(ctx, "tcp", s.peer)
	if err != nil {
		return nil, err
	}
	l, err := openLink(c, s.opts, "ingress", nil)
	if err != nil {
		c.Close()
		return nil, err
	}
	return l, nil
}

func (s *skupperIngress) listener() net.Listener { return s.ln }

func (s *skupperIngress) serve(ctx context.Context) {
	go s.maintain(ctx)
	serveUntilDone(ctx, s.ln, s.opts.log, func() { s.cur.Load().Close() }, func(c net.Conn) {
		if err := s.cur.Load().openStream(c, s.target); err != nil {
			s.opts.log.Printf("client %s: %v", c.RemoteAddr(), err)
			c.Close()
		}
	})
}

// maintain re-establishes the link when it drops (streams on the old link are lost, as with a router restart).
func (s *skupperIngress) maintain(ctx context.Context) {
	for {
		l := s.cur.Load()
		select {
		case <-ctx.Done():
			return
		case <-l.closed:
		}
		if ctx.Err() != nil {
			return
		}
		s.opts.log.Printf("link to %s down: %v; reconnecting", s.peer, l.err)
		for {
			nl, err := s.connect(ctx)
			if err == nil {
				s.cur.Store(nl)
				s.opts.log.Printf("link to %s up again", s.peer)
				if ctx.Err() != nil {
					nl.Close()
				}
				break
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}
}

// ---------------------------------------------------------------------------------------------- CLI
func skupperFlags(fs *flag.FlagSet) (*int, *uint) {
	var frame int
	var window uint
	fs.IntVar(&frame, "max-frame-size", defaultMaxFrameSize,
		"largest AMQP frame in bytes, header included (the default is skupper-router's)")
	fs.UintVar(&window, "session-window", defaultSessionWindow,
		"session incoming window in frames (the default is skupper-router's maxSessionFrames)")
	return &frame, &window
}

func checkSkupperOpts(frame int, window uint) error {
	if frame < amqpMinMaxFrameSize || frame > 1<<24 {
		return fmt.Errorf("-max-frame-size must be between %d and %d", amqpMinMaxFrameSize, 1<<24)
	}
	if window < 1 || window > 1<<20 {
		return fmt.Errorf("-session-window must be between 1 and %d", 1<<20)
	}
	return nil
}

func runSkupperEgress(args []string) error {
	fs := newFlags("skupper-egress", "-listen IP:55671 -certs D [-max-frame-size 16384] [-session-window 640]",
		"Skupper model, the gateway of the cluster that exposes the service. Accepts the inter-router link from\n"+
			"skupper-ingress (mutual TLS, client certificate verified against D/ca.pem, then AMQP 1.0 open/begin).\n"+
			"For each stream the peer attaches it dials the stream's target (host:port, carried in the attach) and\n"+
			"relays bytes both ways as AMQP transfer frames under session flow control.")
	flags := egressFlags(fs, "address to accept the link on (skupper-router's inter-router port is 55671)")
	frame, window := skupperFlags(fs)
	if err := flags.parse(fs, args); err != nil {
		return err
	}
	if err := checkSkupperOpts(*frame, *window); err != nil {
		return err
	}
	server, err := flags.tlsConfig()
	if err != nil {
		return err
	}
	s := &skupperEgress{listen: *flags.listen, tls: server,
		opts: skupperOpts{maxFrameSize: *frame, window: uint32(*window), log: newLogger("skupper-egress")}}
	return runGateway(s, func(context.Context) error { return s.start() })
}

func runSkupperIngress(args []string) error {
	fs := newFlags("skupper-ingress",
		"-listen IP:PORT -peer IP:55671 -target HOST:PORT -certs D [-max-frame-size 16384] [-session-window 640]",
		"Skupper model, the gateway of the cluster whose applications call the service. At start opens ONE\n"+
			"mutual-TLS AMQP link to -peer (retrying for 5 s; startup fails otherwise) and only then accepts\n"+
			"application TCP connections on -listen; each becomes a stream on the link (attach carrying -target),\n"+
			"its bytes carried as transfer frames. The link is re-opened if it drops.")
	flags := ingressFlags(fs, "address applications connect to (the service's address in this cluster)",
		"the peer gateway's skupper-egress address (IP:55671)",
		"the service, as the peer gateway dials it (HOST:PORT)")
	frame, window := skupperFlags(fs)
	if err := flags.parse(fs, args); err != nil {
		return err
	}
	if err := checkSkupperOpts(*frame, *window); err != nil {
		return err
	}
	client, err := flags.tlsConfig()
	if err != nil {
		return err
	}
	s := &skupperIngress{listen: *flags.listen, peer: *flags.peer, target: *flags.target, tls: client,
		opts: skupperOpts{maxFrameSize: *frame, window: uint32(*window), log: newLogger("skupper-ingress")}}
	return runGateway(s, s.start)
}
