package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

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
