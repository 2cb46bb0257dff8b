package main

// The Skupper model's streams: one per application connection, relayed over the link under one handle number.
// A pump goroutine turns the application's bytes into transfer frames; a writer goroutine writes the peer's
// frames to the application and returns their session credit once written.

import (
	"errors"
	"io"
	"net"
	"sync"
)

type abortOrigin int

const (
	local    abortOrigin = iota // an error on our side (application socket, dial)
	fromPeer                    // the peer sent a detach with an error
	linkDown                    // the link is gone: nothing can be sent
)

type inItem struct {
	data []byte
	buf  *[]byte
	eof  bool // the peer's direction ended: half-close the application connection
}

// stream: one application connection, relayed over the link under one handle number (both directions).
type stream struct {
	l      *link
	handle uint32
	target string
	in     chan inItem   // the peer's bytes, in order, for the writer goroutine
	ready  chan struct{} // closed once conn is set
	done   chan struct{} // closed when the stream is aborted

	mu         sync.Mutex
	conn       net.Conn
	aborted    bool
	sentDetach bool // our direction has ended (detach sent)
	sentAbort  bool // a detach with an error was sent
	gotDetach  bool // the peer's direction has ended
	writerDone bool // the peer's bytes are all written (or dropped) and its end propagated
	finished   bool
}

// newStreamLocked registers a stream (l.mu held) and starts its writer goroutine.
func (l *link) newStreamLocked(h uint32, target string) *stream {
	s := &stream{l: l, handle: h, target: target, in: make(chan inItem, l.opts.window+1),
		ready: make(chan struct{}), done: make(chan struct{})}
	l.streams[h] = s
	go s.writer()
	return s
}

// openStream (ingress): relay the accepted application connection c to target over the link.
func (l *link) openStream(c net.Conn, target string) error {
	l.mu.Lock()
	if l.isClosed() {
		l.mu.Unlock()
		return errLinkClosed
	}
	h := l.nextHandle
	l.nextHandle++
	s := l.newStreamLocked(h, target)
	l.mu.Unlock()
	s.setConn(c)
	if err := l.sendAttach(h, target); err != nil {
		return err
	}
	go s.pump()
	return nil
}

// setConn gives the stream its application connection; false (and c closed) if it was aborted meanwhile.
func (s *stream) setConn(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.aborted {
		c.Close()
		return false
	}
	s.conn = c
	close(s.ready)
	return true
}

// deliver queues bytes from the peer for the writer; false if the stream no longer takes any.
func (s *stream) deliver(it inItem) bool {
	s.mu.Lock()
	if s.aborted || s.gotDetach {
		s.mu.Unlock()
		return false
	}
	select {
	case s.in <- it:
		s.mu.Unlock()
		return true
	default:
	}
	s.mu.Unlock()
	// cannot happen while the peer keeps to the session window (the queue holds a whole window); never drop
	// bytes silently: the stream breaks instead
	s.abort(errors.New("receive queue overflow"), local)
	return false
}

// peerEnded: the peer's direction ended normally; the writer half-closes once the queued bytes are written.
func (s *stream) peerEnded() {
	s.mu.Lock()
	if s.gotDetach {
		s.mu.Unlock()
		return
	}
	s.gotDetach = true
	if !s.aborted {
		select {
		case s.in <- inItem{eof: true}: // room is kept for it (window + 1)
		default:
		}
	}
	s.mu.Unlock()
	s.maybeFinish()
}

// abort ends the stream at once: the application connection is closed and, unless the link is down or both
// directions already ended, a detach with an error tells the peer to do the same.
func (s *stream) abort(cause error, origin abortOrigin) {
	s.mu.Lock()
	ended := s.sentDetach && s.gotDetach // both directions had ended: a late error is not worth a log line
	switch origin {
	case fromPeer:
		s.gotDetach = true
	case linkDown:
		s.sentDetach, s.gotDetach = true, true
	}
	send := origin != linkDown && !s.sentAbort && !(s.sentDetach && s.gotDetach)
	if send {
		s.sentAbort, s.sentDetach = true, true
	}
	first := !s.aborted
	if first {
		s.aborted = true
		close(s.done)
	}
	conn := s.conn
	s.mu.Unlock()
	if first {
		if conn != nil {
			conn.Close()
		}
		if origin == local && !ended && s.l.opts.log != nil {
			s.l.opts.log.Printf("stream %d (%s): %v", s.handle, s.target, cause)
		}
	}
	if send {
		_ = s.l.sendDetach(s.handle, cause)
	}
	s.maybeFinish()
}

// maybeFinish closes and forgets the stream once both directions have ended.
func (s *stream) maybeFinish() {
	s.mu.Lock()
	fin := s.sentDetach && s.gotDetach && s.writerDone && !s.finished
	if fin {
		s.finished = true
	}
	conn := s.conn
	s.mu.Unlock()
	if !fin {
		return
	}
	if conn != nil {
		conn.Close()
	}
	s.l.mu.Lock()
	if s.l.streams[s.handle] == s {
		delete(s.l.streams, s.handle)
	}
	s.l.mu.Unlock()
}

// pump: application bytes -> transfer frames, then (at EOF) the final frame and the detach.
func (s *stream) pump() {
	l := s.l
	l.fmu.Lock()
	deliveryID := l.nextDeliveryID
	l.nextDeliveryID++
	l.fmu.Unlock()
	t := newTransferLayout(s.handle, deliveryID, l.sendMax)
	buf := make([]byte, l.sendMax)
	for {
		n, err := s.conn.Read(buf[t.payloadOff : t.payloadOff+t.maxPayload])
		if n > 0 {
			if s.isAborted() {
				return // its detach has gone out: nothing may follow it
			}
			if err := l.sendTransfer(t.frame(buf, n, 0)); err != nil {
				s.abort(err, linkDown)
				return
			}
		}
		if errors.Is(err, io.EOF) {
			s.endSend(deliveryID)
			return
		}
		if err != nil {
			s.abort(err, local)
			return
		}
	}
}

// endSend: the application half-closed: the delivery's last frame (more=false), then detach(closed=true).
func (s *stream) endSend(deliveryID uint32) {
	l := s.l
	last := make([]byte, frameHeaderSize, 64)
	last = append(last, transferPerformative(s.handle, deliveryID, false)...)
	putFrameHeader(last, len(last), 0)
	if err := l.sendTransfer(last); err != nil {
		s.abort(err, linkDown)
		return
	}
	s.mu.Lock()
	if s.sentDetach || s.aborted {
		s.mu.Unlock()
		return
	}
	s.sentDetach = true
	s.mu.Unlock()
	if err := l.sendDetach(s.handle, nil); err != nil {
		s.abort(err, linkDown)
		return
	}
	s.maybeFinish()
}

// writer: the peer's bytes -> the application connection; each frame's credit returns once it is written.
func (s *stream) writer() {
	select {
	case <-s.ready:
	case <-s.done:
		s.discard()
		return
	}
	for {
		select {
		case it := <-s.in:
			if it.eof {
				if err := closeWrite(s.conn); err != nil {
					s.abort(err, local)
				}
				s.setWriterDone()
				return
			}
			_, err := s.conn.Write(it.data)
			s.l.release(it.buf)
			s.l.consume(1)
			if err != nil {
				s.abort(err, local)
				s.discard()
				return
			}
		case <-s.done:
			s.discard()
			return
		}
	}
}

// discard drops (and credits) whatever is queued after an abort; nothing is queued after it.
func (s *stream) discard() {
	for {
		select {
		case it := <-s.in:
			if !it.eof {
				s.l.release(it.buf)
				s.l.consume(1)
			}
		default:
			s.setWriterDone()
			return
		}
	}
}

func (s *stream) setWriterDone() {
	s.mu.Lock()
	s.writerDone = true
	s.mu.Unlock()
	s.maybeFinish()
}

func (s *stream) isAborted() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.aborted
}
