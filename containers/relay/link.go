package main

// The Skupper model's inter-router link: one AMQP connection with one session over a mutual-TLS connection.
// It opens the connection (protocol header, open, begin), reads and dispatches the peer's frames, serialises our
// frame writes and runs session flow control in both directions (see skupper.go for what maps to what).

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"sync"
	"time"
)

type link struct {
	conn     net.Conn
	opts     skupperOpts
	role     string        // "ingress" or "egress", for link names and logs
	sendMax  int           // max-frame-size of the frames we send: min(ours, the peer's)
	onAttach func(*stream) // egress: a stream opened by the peer (dial its target); nil on the ingress
	bufs     sync.Pool     // frame body buffers

	wmu sync.Mutex // one frame write at a time

	// session flow control, sending side: a transfer may go out while nextOutgoingID is before sendLimit
	// (= the peer's next-incoming-id + incoming-window, from its begin and flow frames)
	fmu            sync.Mutex
	fcond          *sync.Cond
	nextOutgoingID uint32
	sendLimit      uint32
	nextDeliveryID uint32

	// session flow control, receiving side
	rmu            sync.Mutex
	nextIncomingID uint32 // transfer frames received
	consumed       uint32 // transfer frames consumed (payload written to the application, or dropped)
	flowAt         uint32 // `consumed` when the last flow frame was requested
	flowKick       chan struct{}

	mu         sync.Mutex
	streams    map[uint32]*stream
	nextHandle uint32

	closed    chan struct{}
	closeOnce sync.Once
	err       error // why the link closed (valid once closed is closed)
}

// openLink runs the AMQP opening over c (a TLS connection whose handshake is done): each side sends the protocol
// header, open and begin, and reads the peer's. It then starts the link's reader and flow goroutines.
func openLink(c net.Conn, o skupperOpts, role string, onAttach func(*stream)) (*link, error) {
	if o.wrap != nil {
		c = o.wrap(c)
	}
	l := &link{conn: c, opts: o, role: role, onAttach: onAttach, flowKick: make(chan struct{}, 1),
		streams: map[uint32]*stream{}, closed: make(chan struct{})}
	l.fcond = sync.NewCond(&l.fmu)
	l.bufs.New = func() any { b := make([]byte, o.maxFrameSize); return &b }

	_ = c.SetDeadline(time.Now().Add(handshakeTimeout))
	containerID := fmt.Sprintf("edgebench-relay-%s-%d", role, os.Getpid())
	var remoteChannel any // begin's remote-channel: null from the side that begins first, else its channel
	if role == "egress" {
		remoteChannel = uint16(0)
	}
	hello := append([]byte{}, amqpProtocolHeader...)
	hello = append(hello, encodeFrame(0, perf(codeOpen, containerID, nil, uint32(o.maxFrameSize), uint16(0)))...)
	hello = append(hello, encodeFrame(0, perf(codeBegin, remoteChannel, uint32(0), o.window, uint32(math.MaxUint32)))...)
	if _, err := c.Write(hello); err != nil {
		return nil, err
	}
	hdr := make([]byte, len(amqpProtocolHeader))
	if _, err := io.ReadFull(c, hdr); err != nil {
		return nil, fmt.Errorf("reading the AMQP header: %w", err)
	}
	if string(hdr) != string(amqpProtocolHeader) {
		return nil, fmt.Errorf("the peer does not speak AMQP 1.0 (header %q)", hdr)
	}
	open, err := readFrame(c, amqpMinMaxFrameSize, nil)
	if err != nil || open.code != codeOpen {
		return nil, fmt.Errorf("expected open (err %v, got performative 0x%02x)", err, open.code)
	}
	peerMax, ok := open.uintField(2)
	if !ok {
		peerMax = math.MaxUint32
	}
	if peerMax < amqpMinMaxFrameSize {
		return nil, fmt.Errorf("the peer's max-frame-size %d is below AMQP's minimum %d", peerMax, amqpMinMaxFrameSize)
	}
	l.sendMax = int(min(uint64(o.maxFrameSize), uint64(peerMax)))
	begin, err := readFrame(c, o.maxFrameSize, nil)
	if err != nil || begin.code != codeBegin {
		return nil, fmt.Errorf("expected begin (err %v, got performative 0x%02x)", err, begin.code)
	}
	peerWindow, _ := begin.uintField(2)
	peerNextOut, _ := begin.uintField(1)
	l.sendLimit = peerWindow // our first transfer-id is 0, the peer expects it next
	l.nextIncomingID = peerNextOut
	l.consumed, l.flowAt = peerNextOut, peerNextOut
	_ = c.SetDeadline(time.Time{})
	go l.readLoop()
	go l.flowLoop()
	return l, nil
}

// Close ends the link: a close frame, then the connection.
func (l *link) Close() error {
	select {
	case <-l.closed:
	default:
		_ = l.write(encodeFrame(0, perf(codeClose)))
	}
	l.fail(errLinkClosed)
	return nil
}

// fail tears the link down once: every stream is aborted (its application connection closed).
func (l *link) fail(err error) {
	l.closeOnce.Do(func() {
		l.err = err
		close(l.closed)
		l.conn.Close()
		l.fmu.Lock()
		l.fcond.Broadcast()
		l.fmu.Unlock()
		l.mu.Lock()
		streams := l.streams
		l.streams = map[uint32]*stream{}
		l.mu.Unlock()
		for _, s := range streams {
			s.abort(err, linkDown)
		}
	})
}

func (l *link) isClosed() bool {
	select {
	case <-l.closed:
		return true
	default:
		return false
	}
}

// write sends one complete frame.
func (l *link) write(b []byte) error {
	l.wmu.Lock()
	_, err := l.conn.Write(b)
	l.wmu.Unlock()
	if err != nil {
		l.fail(err)
	}
	return err
}

// sendTransfer waits for session credit, then sends a transfer frame.
func (l *link) sendTransfer(b []byte) error {
	l.fmu.Lock()
	for int32(l.sendLimit-l.nextOutgoingID) <= 0 {
		if l.isClosed() {
			l.fmu.Unlock()
			return errLinkClosed
		}
		l.fcond.Wait()
	}
	l.nextOutgoingID++
	l.fmu.Unlock()
	return l.write(b)
}

func (l *link) sendAttach(h uint32, address string) error {
	name := fmt.Sprintf("edgebench-%s-%d", l.role, h)
	target := described{codeTarget, []any{address}}
	// attach(name, handle, role=sender, snd-settle-mode, rcv-settle-mode, source, target, unsettled,
	// incomplete-unsettled, initial-delivery-count)
	return l.write(encodeFrame(0, perf(codeAttach, name, h, false, nil, nil, nil, target, nil, nil, uint32(0))))
}

func (l *link) sendDetach(h uint32, cause error) error {
	var errList any
	if cause != nil {
		desc := cause.Error()
		if len(desc) > 200 {
			desc = desc[:200]
		}
		errList = described{codeError, []any{symbol("amqp:internal-error"), desc}}
	}
	return l.write(encodeFrame(0, perf(codeDetach, h, true, errList)))
}

func (l *link) release(b *[]byte) {
	if b != nil {
		l.bufs.Put(b)
	}
}

// consume records n transfer frames as consumed and asks for a flow frame every half window.
func (l *link) consume(n uint32) {
	l.rmu.Lock()
	l.consumed += n
	kick := l.consumed-l.flowAt >= max(1, l.opts.window/2)
	if kick {
		l.flowAt = l.consumed
	}
	l.rmu.Unlock()
	if kick {
		select {
		case l.flowKick <- struct{}{}:
		default: // one is already pending; it will carry the latest numbers
		}
	}
}

// flowLoop sends the flow frames consume asks for (never from the reader goroutine, which must not block on writes).
func (l *link) flowLoop() {
	for {
		select {
		case <-l.closed:
			return
		case <-l.flowKick:
		}
		l.rmu.Lock()
		next := l.nextIncomingID
		window := l.opts.window - (l.nextIncomingID - l.consumed)
		l.rmu.Unlock()
		l.fmu.Lock()
		out := l.nextOutgoingID
		l.fmu.Unlock()
		// flow(next-incoming-id, incoming-window, next-outgoing-id, outgoing-window)
		if l.write(encodeFrame(0, perf(codeFlow, next, window, out, uint32(math.MaxUint32)))) != nil {
			return
		}
	}
}

func (l *link) readLoop() {
	for {
		f, err := readFrame(l.conn, l.opts.maxFrameSize, l.getBuf)
		if err == nil {
			err = l.dispatch(&f)
		} else {
			l.release(f.body)
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errors.New("the peer closed the link")
			}
			l.fail(err)
			return
		}
	}
}

func (l *link) getBuf() *[]byte { return l.bufs.Get().(*[]byte) }

func (l *link) stream(h uint32) *stream {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.streams[h]
}

func (l *link) dispatch(f *frame) error {
	if f.code != codeTransfer {
		l.release(f.body)
	}
	switch f.code {
	case codeTransfer:
		return l.onTransfer(f)
	case codeFlow:
		nextIn, ok := f.uintField(0)
		if !ok {
			nextIn = 0 // null before the peer has seen our begin: our initial next-outgoing-id
		}
		window, _ := f.uintField(1)
		l.fmu.Lock()
		l.sendLimit = nextIn + window
		l.fcond.Broadcast()
		l.fmu.Unlock()
	case codeAttach:
		h, ok := f.uintField(1)
		if !ok {
			return errors.New("attach without a handle")
		}
		l.mu.Lock()
		if s := l.streams[h]; s != nil || l.onAttach == nil {
			l.mu.Unlock() // the reply half of a stream we opened
			return nil
		}
		s := l.newStreamLocked(h, f.terminusAddress(6))
		l.mu.Unlock()
		go l.onAttach(s)
	case codeDetach:
		h, _ := f.uintField(0)
		if s := l.stream(h); s != nil {
			if cond := f.errorCondition(2); cond != "" {
				s.abort(fmt.Errorf("aborted by the peer: %s", cond), fromPeer)
			} else {
				s.peerEnded()
			}
		}
	case codeClose:
		return errors.New("the peer closed the link")
	case codeEnd:
		return errors.New("the peer ended the session")
	}
	return nil // open/begin again, empty frames, anything else: ignored
}

func (l *link) onTransfer(f *frame) error {
	h, ok := f.uintField(0)
	if !ok {
		l.release(f.body)
		return errors.New("transfer without a handle")
	}
	l.rmu.Lock()
	l.nextIncomingID++
	outstanding := l.nextIncomingID - l.consumed
	l.rmu.Unlock()
	if outstanding > l.opts.window {
		l.release(f.body)
		return fmt.Errorf("the peer exceeded the session window (%d frames outstanding, window %d)", outstanding, l.opts.window)
	}
	if len(f.payload) > 0 {
		if s := l.stream(h); s != nil && s.deliver(inItem{data: f.payload, buf: f.body}) {
			return nil
		}
	}
	// nothing to write (the final frame of a delivery), or the stream is gone: consumed at once
	l.release(f.body)
	l.consume(1)
	return nil
}
