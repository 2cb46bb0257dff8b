// edgebench-relay: models of the data planes of two inter-cluster tools, for edgebench's local testbed.
//
// On the local testbed (Linux network namespaces, no Kubernetes) neither skupper-router (Skupper's data plane)
// nor ClusterLink's dataplane can run, so the gateway namespaces run this program instead. It reproduces the
// MECHANISM each data plane uses to carry application TCP connections between two gateways - not the tools
// themselves - and every run that uses it is labelled "emulated" by edgebench.
//
//   - Skupper (skupper.go, link.go, stream.go, amqp.go): ONE long-lived mutual-TLS connection between the
//     gateways (the inter-router link, established before any application traffic); every application
//     connection becomes a stream
//     multiplexed over it as AMQP 1.0 frames (attach / transfer / flow / detach), at most max-frame-size bytes
//     each (16384, skupper-router's default), under a session window of 640 frames (its maxSessionFrames).
//   - ClusterLink (clusterlink.go): for EVERY application connection a NEW mutual-TLS connection to the peer
//     gateway (full TLS 1.3 handshake), one HTTP/1.1 request/response naming the target, then raw bytes.
//
// Subcommands: version, certs, skupper-egress, skupper-ingress, clusterlink-egress, clusterlink-ingress
// (`edgebench-relay <subcommand> -h`). The servers print one line "ready <listen address>" on stdout once they
// accept connections, log errors on stderr and run until SIGTERM/SIGINT (exit 0); a startup failure exits 1.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

const version = "0.1.0"

const (
	// skupper-router's defaults (Skupper's RouterMaxFrameSizeDefault / RouterMaxSessionFramesDefault)
	defaultMaxFrameSize  = 16384
	defaultSessionWindow = 640
	// startup: how long a relay keeps trying to reach its peer before giving up
	peerWait = 5 * time.Second
	// per-attempt / per-connection timeouts
	dialTimeout      = 5 * time.Second
	handshakeTimeout = 10 * time.Second
)

type command struct {
	name, args, help string
	run              func(args []string) error
}

var commands = []command{
	{"version", "", "print the version", runVersion},
	{"certs", "-dir D -ip IP1,IP2,...", "write a throw-away CA and a gateway certificate for mutual TLS", runCerts},
	{"skupper-egress", "-listen IP:55671 -certs D", "Skupper model, receiving gateway: accept the AMQP link", runSkupperEgress},
	{"skupper-ingress", "-listen IP:PORT -peer IP:55671 -target HOST:PORT -certs D", "Skupper model, sending gateway: open the link, relay application connections over it", runSkupperIngress},
	{"clusterlink-egress", "-listen IP:4443 -certs D", "ClusterLink model, receiving gateway: accept mTLS + CONNECT per connection", runClusterlinkEgress},
	{"clusterlink-ingress", "-listen IP:PORT -peer IP:4443 -target HOST:PORT -certs D", "ClusterLink model, sending gateway: one new mTLS connection per application connection", runClusterlinkIngress},
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "edgebench-relay %s - models of the Skupper and ClusterLink data planes (emulated runs)\n\n", version)
	fmt.Fprintf(w, "Usage: edgebench-relay <subcommand> [flags]   (edgebench-relay <subcommand> -h for details)\n\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-20s %s\n", c.name, c.help)
		if c.args != "" {
			fmt.Fprintf(w, "  %-20s   %s\n", "", c.args)
		}
	}
	fmt.Fprintf(w, "\nServers print \"ready <listen address>\" on stdout once listening and run until SIGTERM/SIGINT.\n")
}

func main() {
	if len(os.Args) < 2 {
		usage(os.Stderr)
		os.Exit(1)
	}
	name := os.Args[1]
	if name == "-h" || name == "-help" || name == "--help" || name == "help" {
		usage(os.Stdout)
		return
	}
	for _, c := range commands {
		if c.name == name {
			err := c.run(os.Args[2:])
			if errors.Is(err, flag.ErrHelp) {
				return
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "edgebench-relay %s: error: %v\n", name, err)
				os.Exit(1)
			}
			return
		}
	}
	fmt.Fprintf(os.Stderr, "edgebench-relay: unknown subcommand %q\n\n", name)
	usage(os.Stderr)
	os.Exit(1)
}

// newFlags: a flag set whose -h output explains the subcommand; parse errors are returned, not exits.
func newFlags(name, synopsis, description string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: edgebench-relay %s %s\n\n%s\n\nFlags:\n", name, synopsis, description)
		fs.PrintDefaults()
	}
	return fs
}

func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	return nil
}

func required(pairs ...string) error {
	for i := 0; i < len(pairs); i += 2 {
		if pairs[i+1] == "" {
			return fmt.Errorf("-%s is required", pairs[i])
		}
	}
	return nil
}

func runVersion(args []string) error {
	fs := newFlags("version", "", "Print the version.")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	fmt.Printf("edgebench-relay %s\n", version)
	return nil
}

func runCerts(args []string) error {
	fs := newFlags("certs", "-dir D -ip IP1,IP2,...",
		"Write a throw-away ECDSA P-256 CA (D/ca.pem; its key is discarded) and one gateway certificate and key\n"+
			"(D/tls.pem, D/tls-key.pem, mode 0600) valid for serverAuth and clientAuth, with the given IP SANs and the\n"+
			"DNS name \"edgebench-gateway\". Both relays of a pair use the same directory: mutual TLS 1.3, each side\n"+
			"verifying the other against ca.pem.")
	dir := fs.String("dir", "", "directory to write the files into (created if missing)")
	ipList := fs.String("ip", "", "comma-separated IP addresses of the gateways (the certificate's IP SANs)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := required("dir", *dir, "ip", *ipList); err != nil {
		return err
	}
	ips, err := parseIPs(*ipList)
	if err != nil {
		return err
	}
	return writeCerts(*dir, ips)
}

// serverContext: cancelled on SIGTERM / SIGINT.
func serverContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
}

func announceReady(addr string) { fmt.Printf("ready %s\n", addr) }

func newLogger(mode string) *log.Logger {
	return log.New(os.Stderr, "edgebench-relay "+mode+": ", log.LstdFlags|log.Lmicroseconds)
}

// ---------------------------------------------------------------------------------------------- shared plumbing

// retryDial calls dial until it succeeds or `wait` has passed (or ctx ends), pausing briefly between attempts.
func retryDial[T any](ctx context.Context, wait time.Duration, dial func(context.Context) (T, error)) (T, error) {
	deadline := time.Now().Add(wait)
	for attempt := 1; ; attempt++ {
		c, err := dial(ctx)
		if err == nil {
			return c, nil
		}
		if ctx.Err() != nil || time.Now().Add(250*time.Millisecond).After(deadline) {
			var zero T
			return zero, fmt.Errorf("after %d attempts over %s: %w", attempt, wait, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// closeWrite half-closes c (TCP FIN; for TLS a close_notify alert), or closes it if it cannot half-close.
func closeWrite(c net.Conn) error {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Close()
}

// splice copies bytes both ways between a and b until both directions have ended. The end of one direction
// (EOF) is propagated as a half-close; an error in either direction closes both connections. ar / br, when not
// nil, are the readers to use for a / b (a bufio.Reader holding bytes read past an HTTP header).
func splice(a, b net.Conn, ar, br io.Reader) {
	if ar == nil {
		ar = a
	}
	if br == nil {
		br = b
	}
	var wg sync.WaitGroup
	var once sync.Once
	abort := func() { once.Do(func() { a.Close(); b.Close() }) }
	pipe := func(dst net.Conn, src io.Reader) {
		defer wg.Done()
		if _, err := io.Copy(dst, src); err != nil {
			abort()
			return
		}
		if err := closeWrite(dst); err != nil {
			abort()
		}
	}
	wg.Add(2)
	go pipe(b, ar)
	go pipe(a, br)
	wg.Wait()
	a.Close()
	b.Close()
}

// tracker remembers open connections so that a server can close them all when it stops.
type tracker struct {
	mu    sync.Mutex
	conns map[io.Closer]struct{}
	done  bool
}

// add registers c; it returns false (and closes c) when the server is already stopping.
func (t *tracker) add(c io.Closer) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		c.Close()
		return false
	}
	if t.conns == nil {
		t.conns = map[io.Closer]struct{}{}
	}
	t.conns[c] = struct{}{}
	return true
}

func (t *tracker) remove(c io.Closer) {
	t.mu.Lock()
	delete(t.conns, c)
	t.mu.Unlock()
}

func (t *tracker) closeAll() {
	t.mu.Lock()
	t.done = true
	conns := t.conns
	t.conns = nil
	t.mu.Unlock()
	for c := range conns {
		c.Close()
	}
}

// isClosedErr: the error a listener or connection returns once we closed it ourselves.
func isClosedErr(err error) bool { return errors.Is(err, net.ErrClosed) }
