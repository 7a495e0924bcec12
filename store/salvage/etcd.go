package salvage

import (
	"cmp"
	"encoding/binary"
	"fmt"

	"go.etcd.io/etcd/server/v3/storage/schema"
	"google.golang.org/protobuf/encoding/protowire"
)

// The bucket and meta key names the scan compares items with, as
// strings, from etcd's own storage/schema.
var (
	bucketKey     = string(schema.Key.Name())
	bucketMeta    = string(schema.Meta.Name())
	bucketLease   = string(schema.Lease.Name())
	bucketMembers = string(schema.Members.Name())

	metaFinishedCompact  = string(schema.FinishedCompactKeyName)
	metaScheduledCompact = string(schema.ScheduledCompactKeyName)
	metaConsistentIndex  = string(schema.MetaConsistentIndexKeyName)
)

// isMetaKey reports whether k is a key etcd writes in "meta".
func isMetaKey(k []byte) bool {
	for _, m := range [][]byte{schema.FinishedCompactKeyName, schema.ScheduledCompactKeyName, schema.MetaConsistentIndexKeyName, schema.MetaTermKeyName, schema.MetaStorageVersionName, schema.MetaConfStateName} {
		if string(k) == string(m) {
			return true
		}
	}
	return false
}

// isEtcdBucket reports whether name is one of etcd's buckets.
func isEtcdBucket(name []byte) bool {
	for _, b := range schema.AllBuckets {
		if string(name) == string(b.Name()) {
			return true
		}
	}
	return false
}

// Revision is a revision key of etcd's "key" bucket: the main revision
// (one per transaction) and the sub revision (the change's index in it).
type Revision struct {
	Main, Sub int64
}

// String formats the revision as etcd's logs do: "main_sub".
func (r Revision) String() string { return fmt.Sprintf("%d_%d", r.Main, r.Sub) }

// less orders revisions.
func (r Revision) less(o Revision) bool {
	return r.Main < o.Main || r.Main == o.Main && r.Sub < o.Sub
}

// cmp orders r and o as less does (-1, 0, +1).
func (r Revision) cmp(o Revision) int {
	if c := cmp.Compare(r.Main, o.Main); c != 0 {
		return c
	}
	return cmp.Compare(r.Sub, o.Sub)
}

// parseRevKey parses a "key" bucket key: 17 bytes (main, '_', sub), or 18
// with a trailing 't' for a tombstone.
func parseRevKey(k []byte) (rev Revision, tomb, ok bool) {
	switch {
	case len(k) == 17:
	case len(k) == 18 && k[17] == 't':
		tomb = true
	default:
		return Revision{}, false, false
	}
	if k[8] != '_' {
		return Revision{}, false, false
	}
	rev = Revision{Main: int64(binary.BigEndian.Uint64(k[0:8])), Sub: int64(binary.BigEndian.Uint64(k[9:17]))}
	if rev.Main <= 0 || rev.Sub < 0 {
		return Revision{}, false, false
	}
	return rev, tomb, true
}

// revKey returns rev's 17-byte key (18 with the tombstone mark).
func revKey(rev Revision, tomb bool) []byte {
	n := 17
	if tomb {
		n = 18
	}
	k := make([]byte, n)
	binary.BigEndian.PutUint64(k[0:8], uint64(rev.Main))
	k[8] = '_'
	binary.BigEndian.PutUint64(k[9:17], uint64(rev.Sub))
	if tomb {
		k[17] = 't'
	}
	return k
}

// kv is the part of an mvccpb.KeyValue the scan checks; key and value
// alias the input.
type kv struct {
	key                  []byte
	create, mod, version int64
	lease                int64
	value                []byte
}

// parseKV decodes an mvccpb.KeyValue (key=1, create_revision=2,
// mod_revision=3, version=4, value=5, lease=6) at the wire level. Every
// byte must belong to a well-formed field; unknown fields are allowed
// (newer etcd releases may add some), a wrong wire type for a known one
// is not.
func parseKV(b []byte) (kv, bool) {
	var out kv
	sawKey := false
	for i := 0; i < len(b); {
		num, typ, n := protowire.ConsumeTag(b[i:])
		if n < 0 {
			return kv{}, false
		}
		i += n
		switch {
		case (num == 1 || num == 5) && typ == protowire.BytesType:
			v, m := protowire.ConsumeBytes(b[i:])
			if m < 0 {
				return kv{}, false
			}
			if num == 1 {
				out.key, sawKey = v, true
			} else {
				out.value = v
			}
			i += m
		case num >= 2 && num <= 4 || num == 6:
			if typ != protowire.VarintType {
				return kv{}, false
			}
			v, m := protowire.ConsumeVarint(b[i:])
			if m < 0 {
				return kv{}, false
			}
			switch num {
			case 2:
				out.create = int64(v)
			case 3:
				out.mod = int64(v)
			case 4:
				out.version = int64(v)
			case 6:
				out.lease = int64(v)
			}
			i += m
		case num == 1 || num == 5:
			return kv{}, false
		default:
			m := protowire.ConsumeFieldValue(num, typ, b[i:])
			if m < 0 {
				return kv{}, false
			}
			i += m
		}
	}
	if !sawKey || len(out.key) == 0 {
		return kv{}, false
	}
	return out, true
}

// checkKV reports whether a decoded KeyValue is what etcd writes at rev:
// a put names its own revision as mod_revision, a creation at or before
// it and a version of at least 1; a tombstone holds the key and, in the
// releases that set them, the same mod revision.
func checkKV(x kv, rev Revision, tomb bool) bool {
	if tomb {
		return x.mod == 0 || x.mod == rev.Main
	}
	return x.mod == rev.Main && x.create > 0 && x.create <= x.mod && x.version >= 1
}

// parseLease decodes a leasepb.Lease (ID=1, TTL=2, RemainingTTL=3, all
// varints) and reports whether it is well formed.
func parseLease(b []byte) (id int64, ok bool) {
	sawID := false
	for i := 0; i < len(b); {
		num, typ, n := protowire.ConsumeTag(b[i:])
		if n < 0 || num < 1 || num > 3 || typ != protowire.VarintType {
			return 0, false
		}
		i += n
		v, m := protowire.ConsumeVarint(b[i:])
		if m < 0 {
			return 0, false
		}
		i += m
		if num == 1 {
			id, sawID = int64(v), true
		}
	}
	return id, sawID
}

// leaseItem reports whether k, v is an item of the "lease" bucket: an
// 8-byte big-endian lease ID and a leasepb.Lease of the same ID.
func leaseItem(k, v []byte) bool {
	if len(k) != 8 {
		return false
	}
	id, ok := parseLease(v)
	return ok && id != 0 && uint64(id) == binary.BigEndian.Uint64(k)
}

// memberItem reports whether k, v looks like an item of the "members"
// bucket: a member ID in hex and a JSON object.
func memberItem(k, v []byte) bool {
	if len(k) == 0 || len(k) > 16 || len(v) < 2 || v[0] != '{' || v[len(v)-1] != '}' {
		return false
	}
	for _, c := range k {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
