package main

import (
	"os"
	"strconv"

	"github.com/rogpeppe/go-internal/testscript"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/etcdpvc/etcdpvc/codec"
)

// cmdWireType writes a copy of a protobuf stored value with one field's
// wire type changed to varint, every length kept: the envelope still
// parses, and every field before it as stored.
//
//	wiretype IN OUT FIELD          the object's first field FIELD
//	wiretype IN OUT FIELD INNER    field INNER of the object's first field FIELD (a message)
//
// `wiretype cm.bin bad.bin 2` damages a ConfigMap's data; `wiretype
// cm.bin bad.bin 1 1` its metadata.name.
func cmdWireType(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 3 || len(args) > 4 {
		ts.Fatalf("usage: wiretype IN OUT FIELD [INNER]")
	}
	env, err := codec.ParseUnknown([]byte(ts.ReadFile(args[0])))
	ts.Check(err)
	var nums []protowire.Number
	for _, a := range args[2:] {
		n, err := strconv.Atoi(a)
		ts.Check(err)
		nums = append(nums, protowire.Number(n))
	}
	raw := append([]byte{}, env.Raw...)
	msg, base := raw, 0
	if len(nums) == 2 {
		if msg, base = fieldAt(raw, nums[0]); msg == nil {
			ts.Fatalf("no field %d in the object", nums[0])
		}
	}
	off := tagAt(msg, nums[len(nums)-1])
	if off < 0 {
		ts.Fatalf("no field %v in the object", args[2:])
	}
	raw[base+off] &^= 7 // wire type 0: varint
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), env.WithRaw(raw), 0o600))
}

// fieldAt returns the value of the first length-delimited field num of
// msg, and where that value starts in msg.
func fieldAt(msg []byte, num protowire.Number) ([]byte, int) {
	for b, base := msg, 0; len(b) > 0; {
		n2, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, 0
		}
		m := protowire.ConsumeFieldValue(n2, typ, b[n:])
		if m < 0 {
			return nil, 0
		}
		if n2 == num && typ == protowire.BytesType {
			v, l := protowire.ConsumeBytes(b[n:])
			return v, base + n + (l - len(v))
		}
		b, base = b[n+m:], base+n+m
	}
	return nil, 0
}

// tagAt returns where the first tag of field num starts in msg, -1 when
// there is none (a single-byte tag is assumed, as for fields below 16).
func tagAt(msg []byte, num protowire.Number) int {
	for b, base := msg, 0; len(b) > 0; {
		n2, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return -1
		}
		if n2 == num {
			return base
		}
		m := protowire.ConsumeFieldValue(n2, typ, b[n:])
		if m < 0 {
			return -1
		}
		b, base = b[n+m:], base+n+m
	}
	return -1
}
