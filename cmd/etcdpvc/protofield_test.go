package main

import (
	"os"
	"strconv"

	"github.com/rogpeppe/go-internal/testscript"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/etcdpvc/etcdpvc/codec"
)

// cmdProtoField writes a copy of a protobuf stored value with one more
// field in the object, as a newer apiserver would store a field this
// build does not know:
//
//	protofield IN OUT NUMBER VALUE   append field NUMBER (bytes VALUE) to the object
func cmdProtoField(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 4 {
		ts.Fatalf("usage: protofield IN OUT NUMBER VALUE")
	}
	env, err := codec.ParseUnknown([]byte(ts.ReadFile(args[0])))
	ts.Check(err)
	num, err := strconv.Atoi(args[2])
	ts.Check(err)
	raw := protowire.AppendTag(append([]byte{}, env.Raw...), protowire.Number(num), protowire.BytesType)
	raw = protowire.AppendBytes(raw, []byte(args[3]))
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), env.WithRaw(raw), 0o600))
}
