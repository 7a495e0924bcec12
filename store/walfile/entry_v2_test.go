package walfile

import (
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// v2Request encodes a v2 store request the way etcd 3.5 logs it for the
// cluster version: etcdserverpb.Request{ID, Method, Path, Val}.
func v2Request(method string) []byte {
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, 0x1234)
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendString(b, method)
	b = protowire.AppendTag(b, 3, protowire.BytesType)
	b = protowire.AppendString(b, "/0/version")
	b = protowire.AppendTag(b, 4, protowire.BytesType)
	b = protowire.AppendString(b, "3.5.0")
	return b
}

func entry(t *testing.T, index uint64, data []byte) []byte {
	t.Helper()
	b, err := proto.Marshal(&raftpb.Entry{Index: proto.Uint64(index), Term: proto.Uint64(2), Type: raftpb.EntryNormal.Enum(), Data: data})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDecodeEntryV2Request checks that the bare v2 store requests etcd 3.5
// logs are recognised and counted, not taken for a damaged log, and that
// anything else that is not an InternalRaftRequest still is an error.
func TestDecodeEntryV2Request(t *testing.T) {
	e, err := DecodeEntry(entry(t, 3, v2Request("PUT")))
	if err != nil {
		t.Fatalf("v2 request: %v", err)
	}
	if e.Kind != KindOther || e.Other != "v2" || e.Index != 3 || e.Request != nil {
		t.Errorf("v2 request decoded as %+v, want kind other, v2, index 3, no request", e)
	}
	put, err := proto.Marshal(&pb.InternalRaftRequest{Put: &pb.PutRequest{Key: []byte("/registry/x"), Value: []byte("v")}})
	if err != nil {
		t.Fatal(err)
	}
	if e, err := DecodeEntry(entry(t, 4, put)); err != nil || e.Kind != KindPut {
		t.Errorf("put: %+v, %v; want a put", e, err)
	}
	for name, data := range map[string][]byte{
		"unknown method": v2Request("FROB"),
		"truncated":      v2Request("PUT")[:5],
		"not protobuf":   {0xff, 0xff, 0xff},
	} {
		if _, err := DecodeEntry(entry(t, 5, data)); err == nil {
			t.Errorf("%s: decoded without an error", name)
		}
	}
}
