package main

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

// ---------------------------------------------------------------------------------------------- AMQP encoding
func TestTransferFrameBytes(t *testing.T) {
	lay := newTransferLayout(0, 0, 512)
	buf := make([]byte, 512)
	copy(buf[lay.payloadOff:], "hi")
	f := lay.frame(buf, 2, 0)
	want := []byte{
		0, 0, 0, 0, 2, 0, 0, 0, // SIZE (filled below), DOFF 2, TYPE 0, CHANNEL 0
		0x00, 0x53, 0x14, // transfer
		0xc0, 16, 6, // list8: size 16, 6 fields
		0x43,                            // handle uint0
		0x43,                            // delivery-id uint0
		0xa0, 8, 0, 0, 0, 0, 0, 0, 0, 0, // delivery-tag vbin8, 8 bytes
		0x43,             // message-format 0
		0x42,             // settled false
		0x41,             // more true
		0x00, 0x53, 0x75, // data section
		0xa0, 2, 'h', 'i', // vbin8
	}
	binary.BigEndian.PutUint32(want, uint32(len(want)))
	if !bytes.Equal(f, want) {
		t.Fatalf("transfer frame\n got % x\nwant % x", f, want)
	}
	// the frame parses back
	fr, err := readFrame(bytes.NewReader(f), 512, nil)
	if err != nil || fr.code != codeTransfer || string(fr.payload) != "hi" || !fr.boolField(5) {
		t.Fatalf("parsed %+v %v", fr, err)
	}
	// a payload of 256+ bytes takes a vbin32
	big := make([]byte, 512)
	f = lay.frame(big, lay.maxPayload, 0)
	if len(f) != 512 || f[lay.payloadOff-5] != 0xb0 {
		t.Fatalf("full frame: %d bytes, section type 0x%02x", len(f), f[lay.payloadOff-5])
	}
	fr, err = readFrame(bytes.NewReader(f), 512, nil)
	if err != nil || len(fr.payload) != lay.maxPayload {
		t.Fatalf("full frame: %v, payload %d", err, len(fr.payload))
	}
}

func TestPerformativeRoundTrip(t *testing.T) {
	long := strings.Repeat("a", 300) // forces list32 and str32
	frm := encodeFrame(3, perf(codeAttach, long, uint32(70000), false, nil, nil, nil,
		described{codeTarget, []any{"10.0.0.1:8080"}}, nil, nil, uint32(0)))
	if frm[11] != 0xd0 {
		t.Fatalf("a 300-byte field should make a list32, got 0x%02x", frm[11])
	}
	f, err := readFrame(bytes.NewReader(frm), 1024, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := f.uintField(1)
	if f.channel != 3 || f.code != codeAttach || f.stringField(0) != long || h != 70000 || f.boolField(2) ||
		f.terminusAddress(6) != "10.0.0.1:8080" {
		t.Fatalf("attach round trip: %+v", f)
	}
	d := encodeFrame(0, perf(codeDetach, uint32(5), true, described{codeError, []any{symbol("amqp:internal-error"), "boom"}}))
	f, err = readFrame(bytes.NewReader(d), 1024, nil)
	if err != nil || f.errorCondition(2) != "amqp:internal-error: boom" {
		t.Fatalf("detach error: %q %v", f.errorCondition(2), err)
	}
	if _, err := readFrame(bytes.NewReader(frm), 64, nil); err == nil {
		t.Fatal("a frame larger than max-frame-size was accepted")
	}
}
