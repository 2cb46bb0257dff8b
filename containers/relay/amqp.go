package main

// AMQP 1.0 framing and the subset of the AMQP type system the Skupper model puts on the wire.
//
// WHAT IS MODELLED. Every byte the skupper model sends over its inter-router link has the shape it has in AMQP 1.0
// (OASIS AMQP 1.0, part 2 "transport" and part 1 "types"):
//
//   - the 8-byte protocol header "AMQP" 0 1 0 0, once per connection and direction;
//   - frames: SIZE (uint32, big-endian, whole frame incl. header), DOFF = 2, TYPE = 0x00 (AMQP), CHANNEL (uint16),
//     then a performative encoded as a described list: 0x00 0x53 <code> then list0/list8/list32 of its fields,
//     trailing null fields omitted (as proton does);
//   - open (0x10) and begin (0x11) once per link: max-frame-size and the session incoming-window are exchanged
//     here, as between two skupper-routers;
//   - attach (0x12) per stream direction, carrying the target address ("host:port") in a target (0x29) list;
//   - transfer (0x14) per frame of stream bytes: handle, delivery-id, delivery-tag (binary), message-format 0,
//     settled, more - followed by the bytes as an AMQP data section 0x00 0x53 0x75 vbin8/vbin32;
//   - flow (0x13) for session flow control (next-incoming-id, incoming-window, next-outgoing-id, outgoing-window);
//   - detach (0x16) with closed=true to end one direction of a stream (an error list when it was aborted);
//   - close (0x18) when a relay shuts the link down.
//
// WHAT IS NOT MODELLED (both ends are this program, so full AMQP compliance is not needed):
//
//   - no SASL layer (skupper-routers authenticate the link with SASL EXTERNAL over the TLS connection; it happens
//     once per link, before any application traffic);
//   - one session (channel 0) per link; no link credit / delivery-count fields (only session flow control);
//   - no dispositions: a streamed delivery is settled once per stream direction in the real router, not per
//     frame, so its cost is a constant per connection that we leave out;
//   - no message header, properties, application-properties or message annotations (the real router adds them
//     to the first frame of each streamed delivery - a few hundred bytes per stream direction, not per frame);
//   - no router-to-router routing, no multi-hop, no address propagation, no heartbeats (empty frames are accepted).
//
// The decoder understands the types the encoder emits plus the other fixed-width scalars, so a frame we did not
// write ourselves is still parsed rather than misread.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// The AMQP 1.0 protocol header (protocol id 0: plain AMQP, version 1.0.0).
var amqpProtocolHeader = []byte{'A', 'M', 'Q', 'P', 0, 1, 0, 0}

const (
	frameHeaderSize = 8
	frameTypeAMQP   = 0x00
	// MIN-MAX-FRAME-SIZE of AMQP 1.0: a peer may not advertise less; frames before open must not be larger.
	amqpMinMaxFrameSize = 512
)

// Descriptor codes (the numeric descriptors, domain 0x00000000) of the performatives and sections used.
const (
	codeOpen     = 0x10
	codeBegin    = 0x11
	codeAttach   = 0x12
	codeFlow     = 0x13
	codeTransfer = 0x14
	codeDetach   = 0x16
	codeEnd      = 0x17
	codeClose    = 0x18
	codeError    = 0x1d
	codeSource   = 0x28
	codeTarget   = 0x29
	codeData     = 0x75
)

// Go values the encoder understands: nil (null), bool, uint8 (ubyte), uint16 (ushort), uint32 (uint),
// uint64 (ulong), string (str), symbol (sym), []byte (binary), []any (list), described.
type symbol string

type described struct {
	code  uint64
	value any
}

// performative: a described list.
func perf(code uint64, fields ...any) described { return described{code, fields} }

// ---------------------------------------------------------------------------------------------- encoding
func appendValue(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, 0x40)
	case bool:
		if x {
			return append(b, 0x41)
		}
		return append(b, 0x42)
	case uint8:
		return append(b, 0x50, x)
	case uint16:
		return binary.BigEndian.AppendUint16(append(b, 0x60), x)
	case uint32:
		switch {
		case x == 0:
			return append(b, 0x43) // uint0
		case x < 256:
			return append(b, 0x52, byte(x)) // smalluint
		}
		return binary.BigEndian.AppendUint32(append(b, 0x70), x)
	case uint64:
		switch {
		case x == 0:
			return append(b, 0x44) // ulong0
		case x < 256:
			return append(b, 0x53, byte(x)) // smallulong
		}
		return binary.BigEndian.AppendUint64(append(b, 0x80), x)
	case string:
		return appendVariable(b, 0xa1, 0xb1, []byte(x))
	case symbol:
		return appendVariable(b, 0xa3, 0xb3, []byte(x))
	case []byte:
		return appendVariable(b, 0xa0, 0xb0, x)
	case []any:
		return appendList(b, x)
	case described:
		return appendDescribed(b, x)
	}
	panic(fmt.Sprintf("amqp: cannot encode %T", v))
}

// appendDescribed: 0x00, the descriptor (a ulong, normally smallulong 0x53 <code>), then the value.
func appendDescribed(b []byte, d described) []byte {
	b = appendValue(append(b, 0x00), d.code)
	return appendValue(b, d.value)
}

// vbin/str/sym: the 8-bit-length form when it fits, else the 32-bit-length form.
func appendVariable(b []byte, code8, code32 byte, data []byte) []byte {
	if len(data) < 256 {
		b = append(b, code8, byte(len(data)))
	} else {
		b = binary.BigEndian.AppendUint32(append(b, code32), uint32(len(data)))
	}
	return append(b, data...)
}

// list0 / list8 / list32; trailing nulls are omitted (a receiver treats missing fields as null).
func appendList(b []byte, items []any) []byte {
	for len(items) > 0 && items[len(items)-1] == nil {
		items = items[:len(items)-1]
	}
	if len(items) == 0 {
		return append(b, 0x45)
	}
	var body []byte
	for _, it := range items {
		body = appendValue(body, it)
	}
	if len(body)+1 < 256 && len(items) < 256 {
		b = append(b, 0xc0, byte(len(body)+1), byte(len(items)))
	} else {
		b = binary.BigEndian.AppendUint32(append(b, 0xd0), uint32(len(body)+4))
		b = binary.BigEndian.AppendUint32(b, uint32(len(items)))
	}
	return append(b, body...)
}

// encodeFrame: one complete AMQP frame (header + performative + optional payload bytes already encoded).
func encodeFrame(channel uint16, p described) []byte {
	b := make([]byte, frameHeaderSize, 64)
	b = appendDescribed(b, p)
	putFrameHeader(b, len(b), channel)
	return b
}

func putFrameHeader(b []byte, size int, channel uint16) {
	binary.BigEndian.PutUint32(b[0:4], uint32(size))
	b[4] = 2 // DOFF: header is 2 x 4 bytes
	b[5] = frameTypeAMQP
	binary.BigEndian.PutUint16(b[6:8], channel)
}

// ---------------------------------------------------------------------------------------------- frames
// frame is one decoded AMQP frame. For a transfer, payload holds the bytes of its data section (aliasing body).
type frame struct {
	channel uint16
	code    uint64 // performative descriptor; 0 for an empty (heartbeat) frame
	fields  []any
	payload []byte
	body    *[]byte // the buffer the frame was read into (from the pool given to readFrame), or nil
}

// field i of a performative (nil when absent).
func (f *frame) field(i int) any {
	if i < len(f.fields) {
		return f.fields[i]
	}
	return nil
}

func (f *frame) uintField(i int) (uint32, bool) {
	v, ok := f.field(i).(uint64)
	return uint32(v), ok
}

func (f *frame) boolField(i int) bool {
	v, _ := f.field(i).(bool)
	return v
}

func (f *frame) stringField(i int) string {
	switch v := f.field(i).(type) {
	case string:
		return v
	case symbol:
		return string(v)
	}
	return ""
}

// terminusAddress: the address (field 0) of a source or target list in field i.
func (f *frame) terminusAddress(i int) string {
	d, ok := f.field(i).(described)
	if !ok {
		return ""
	}
	l, ok := d.value.([]any)
	if !ok || len(l) == 0 {
		return ""
	}
	s, _ := l[0].(string)
	return s
}

// errorCondition: "condition: description" of an error list in field i, or "" when there is none.
func (f *frame) errorCondition(i int) string {
	d, ok := f.field(i).(described)
	if !ok || d.code != codeError {
		return ""
	}
	l, _ := d.value.([]any)
	var cond, desc string
	if len(l) > 0 {
		if s, ok := l[0].(symbol); ok {
			cond = string(s)
		}
	}
	if len(l) > 1 {
		desc, _ = l[1].(string)
	}
	if cond == "" {
		cond = "amqp:internal-error"
	}
	if desc != "" {
		return cond + ": " + desc
	}
	return cond
}

// readFrame reads one frame of at most maxSize bytes. The body is read into a buffer from get (returned to the
// caller in frame.body, to be recycled once the payload has been used) when get is not nil.
func readFrame(r io.Reader, maxSize int, get func() *[]byte) (frame, error) {
	var hdr [frameHeaderSize]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return frame{}, err
	}
	size := int(binary.BigEndian.Uint32(hdr[0:4]))
	doff := int(hdr[4]) * 4
	if hdr[5] != frameTypeAMQP {
		return frame{}, fmt.Errorf("amqp: frame type 0x%02x is not AMQP", hdr[5])
	}
	if size < frameHeaderSize || doff < frameHeaderSize || doff > size {
		return frame{}, fmt.Errorf("amqp: malformed frame header (size %d, doff %d)", size, doff)
	}
	if size > maxSize {
		return frame{}, fmt.Errorf("amqp: frame of %d bytes exceeds max-frame-size %d", size, maxSize)
	}
	f := frame{channel: binary.BigEndian.Uint16(hdr[6:8])}
	n := size - frameHeaderSize
	var body []byte
	if get != nil {
		f.body = get()
		if cap(*f.body) < n {
			*f.body = make([]byte, n)
		}
		body = (*f.body)[:n]
	} else {
		body = make([]byte, n)
	}
	if _, err := io.ReadFull(r, body); err != nil {
		return f, err
	}
	body = body[doff-frameHeaderSize:] // skip the extended header, if any
	if len(body) == 0 {
		return f, nil // empty frame: a heartbeat
	}
	v, used, err := decodeValue(body)
	if err != nil {
		return f, err
	}
	d, ok := v.(described)
	if !ok {
		return f, errors.New("amqp: frame body is not a performative")
	}
	f.code = d.code
	f.fields, _ = d.value.([]any)
	if rest := body[used:]; len(rest) > 0 {
		// the payload: one data section, 0x00 0x53 0x75 then a vbin8/vbin32
		sec, _, err := decodeValue(rest)
		if err != nil {
			return f, err
		}
		data, ok := sec.(described)
		if !ok || data.code != codeData {
			return f, errors.New("amqp: transfer payload is not a data section")
		}
		if f.payload, ok = data.value.([]byte); !ok {
			return f, errors.New("amqp: data section is not binary")
		}
	}
	return f, nil
}

// ---------------------------------------------------------------------------------------------- transfers
// transferLayout precomputes the header of the transfer frames of one stream direction. Every frame of a
// streamed delivery repeats the same transfer performative (as proton does for a multi-frame delivery), so the
// performative is encoded once and each frame costs a header write plus the payload.
//
// A frame is built in place in a buffer of maxFrame bytes whose payload always starts at offset `payloadOff`:
//
//	[SIZE DOFF TYPE CHANNEL][transfer performative][0x00 0x53 0x75][0xb0 len32 | 0xa0 len8][payload ...]
//
// With a vbin8 (payload < 256 bytes) the section header is 3 bytes shorter, so the frame then starts 3 bytes
// into the buffer.
type transferLayout struct {
	perf       []byte // the encoded transfer performative (more = true)
	payloadOff int    // offset of the payload in the frame buffer
	maxPayload int    // payload bytes per frame so that the frame is <= max-frame-size
}

const dataSectionHeader = 3 // 0x00 0x53 0x75

func newTransferLayout(handle, deliveryID uint32, maxFrame int) transferLayout {
	p := transferPerformative(handle, deliveryID, true)
	off := frameHeaderSize + len(p) + dataSectionHeader + 5
	return transferLayout{perf: p, payloadOff: off, maxPayload: maxFrame - off}
}

// transferPerformative: transfer(handle, delivery-id, delivery-tag, message-format 0, settled false, more).
// The delivery tag is the 8-byte big-endian delivery-id (skupper-router's tags are 8-byte counters too).
func transferPerformative(handle, deliveryID uint32, more bool) []byte {
	tag := binary.BigEndian.AppendUint64(nil, uint64(deliveryID))
	return appendDescribed(nil, perf(codeTransfer, handle, deliveryID, tag, uint32(0), false, more))
}

// frame fills in the headers around the n payload bytes already at buf[payloadOff:] and returns the frame.
func (t *transferLayout) frame(buf []byte, n int, channel uint16) []byte {
	start, secLen := 0, 5
	if n < 256 {
		start, secLen = 3, 2
	}
	size := t.payloadOff - start + n
	b := buf[start : start+size]
	putFrameHeader(b, size, channel)
	off := frameHeaderSize + copy(b[frameHeaderSize:], t.perf)
	off += copy(b[off:], []byte{0x00, 0x53, codeData})
	if secLen == 2 {
		b[off], b[off+1] = 0xa0, byte(n)
	} else {
		b[off] = 0xb0
		binary.BigEndian.PutUint32(b[off+1:], uint32(n))
	}
	return b
}
