package main

// Decoding AMQP 1.0 values (the other half of amqp.go's type system): what readFrame and the performative
// accessors use to parse a frame, whoever wrote it.

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ---------------------------------------------------------------------------------------------- decoding
var errShort = errors.New("amqp: truncated value")

// decodeValue decodes one AMQP value at the start of b; it returns the value and the bytes it used.
// Unsigned integers come back as uint64, signed ones as int64, str as string, sym as symbol, binary as []byte
// (aliasing b), lists as []any, maps as []any of alternating keys and values, described values as described
// (numeric descriptors only).
func decodeValue(b []byte) (any, int, error) {
	if len(b) < 1 {
		return nil, 0, errShort
	}
	c := b[0]
	need := func(n int) error {
		if len(b) < 1+n {
			return errShort
		}
		return nil
	}
	switch c {
	case 0x00: // described
		d, n, err := decodeValue(b[1:])
		if err != nil {
			return nil, 0, err
		}
		code, ok := d.(uint64)
		if !ok {
			return nil, 0, fmt.Errorf("amqp: unsupported descriptor %v", d)
		}
		v, m, err := decodeValue(b[1+n:])
		if err != nil {
			return nil, 0, err
		}
		return described{code, v}, 1 + n + m, nil
	case 0x40:
		return nil, 1, nil
	case 0x41:
		return true, 1, nil
	case 0x42:
		return false, 1, nil
	case 0x56:
		if err := need(1); err != nil {
			return nil, 0, err
		}
		return b[1] != 0, 2, nil
	case 0x43, 0x44:
		return uint64(0), 1, nil
	case 0x50, 0x52, 0x53: // ubyte, smalluint, smallulong
		if err := need(1); err != nil {
			return nil, 0, err
		}
		return uint64(b[1]), 2, nil
	case 0x51, 0x54, 0x55: // byte, smallint, smalllong
		if err := need(1); err != nil {
			return nil, 0, err
		}
		return int64(int8(b[1])), 2, nil
	case 0x60:
		if err := need(2); err != nil {
			return nil, 0, err
		}
		return uint64(binary.BigEndian.Uint16(b[1:])), 3, nil
	case 0x61:
		if err := need(2); err != nil {
			return nil, 0, err
		}
		return int64(int16(binary.BigEndian.Uint16(b[1:]))), 3, nil
	case 0x70:
		if err := need(4); err != nil {
			return nil, 0, err
		}
		return uint64(binary.BigEndian.Uint32(b[1:])), 5, nil
	case 0x71, 0x72, 0x73: // int, float, char (raw bits for the last two)
		if err := need(4); err != nil {
			return nil, 0, err
		}
		return int64(int32(binary.BigEndian.Uint32(b[1:]))), 5, nil
	case 0x80:
		if err := need(8); err != nil {
			return nil, 0, err
		}
		return binary.BigEndian.Uint64(b[1:]), 9, nil
	case 0x81, 0x82, 0x83, 0x84: // long, double, timestamp, decimal64 (raw bits)
		if err := need(8); err != nil {
			return nil, 0, err
		}
		return int64(binary.BigEndian.Uint64(b[1:])), 9, nil
	case 0x98: // uuid
		if err := need(16); err != nil {
			return nil, 0, err
		}
		return b[1:17], 17, nil
	case 0xa0, 0xa1, 0xa3, 0xb0, 0xb1, 0xb3:
		var n, hdr int
		if c < 0xb0 {
			if err := need(1); err != nil {
				return nil, 0, err
			}
			n, hdr = int(b[1]), 2
		} else {
			if err := need(4); err != nil {
				return nil, 0, err
			}
			n, hdr = int(binary.BigEndian.Uint32(b[1:])), 5
		}
		if n < 0 || len(b) < hdr+n {
			return nil, 0, errShort
		}
		data := b[hdr : hdr+n]
		switch c & 0x0f {
		case 0x0:
			return data, hdr + n, nil
		case 0x1:
			return string(data), hdr + n, nil
		}
		return symbol(data), hdr + n, nil
	case 0x45:
		return []any{}, 1, nil
	case 0xc0, 0xc1, 0xd0, 0xd1: // list8, map8, list32, map32
		var size, count, hdr int
		if c < 0xd0 {
			if err := need(2); err != nil {
				return nil, 0, err
			}
			size, count, hdr = int(b[1]), int(b[2]), 3
			size-- // size covers the count byte
		} else {
			if err := need(8); err != nil {
				return nil, 0, err
			}
			size, count, hdr = int(binary.BigEndian.Uint32(b[1:])), int(binary.BigEndian.Uint32(b[5:])), 9
			size -= 4
		}
		if size < 0 || len(b) < hdr+size || count > size {
			return nil, 0, errShort
		}
		body := b[hdr : hdr+size]
		items := make([]any, 0, count)
		off := 0
		for i := 0; i < count; i++ {
			v, n, err := decodeValue(body[off:])
			if err != nil {
				return nil, 0, err
			}
			items = append(items, v)
			off += n
		}
		return items, hdr + size, nil
	}
	return nil, 0, fmt.Errorf("amqp: unsupported type code 0x%02x", c)
}
