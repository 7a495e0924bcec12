package walfile

import (
	"fmt"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// Kind classifies a raft entry by what it asks the key-value store to do.
type Kind int

// Entry kinds. KindOther covers what does not touch keys, leases or
// compaction (membership, cluster version, auth, alarms, lease checkpoints,
// reads); KindEmpty the empty entry a new leader appends.
const (
	KindOther Kind = iota
	KindEmpty
	KindPut
	KindDeleteRange
	KindTxn
	KindLeaseGrant
	KindLeaseRevoke
	KindCompaction
	KindConfChange
)

var kindNames = [...]string{"other", "empty", "put", "delete", "txn", "lease-grant", "lease-revoke", "compaction", "conf-change"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Entry is one decoded raft entry.
type Entry struct {
	Index, Term uint64
	Kind        Kind
	// Request is the decoded request of a normal entry (nil for empty and
	// configuration-change entries).
	Request *pb.InternalRaftRequest
	// Other names what a KindOther entry holds ("alarm", "auth", ...).
	Other string
}

// DecodeEntry decodes an entry record's data (a raftpb.Entry) and the
// request inside it. It never panics on malformed input.
func DecodeEntry(data []byte) (Entry, error) {
	var e raftpb.Entry
	if err := proto.Unmarshal(data, &e); err != nil {
		return Entry{}, fmt.Errorf("decode raft entry: %w", err)
	}
	out := Entry{Index: e.GetIndex(), Term: e.GetTerm()}
	switch e.GetType() {
	case raftpb.EntryNormal:
	case raftpb.EntryConfChange, raftpb.EntryConfChangeV2:
		out.Kind = KindConfChange
		return out, nil
	default:
		return Entry{}, fmt.Errorf("raft entry %d: unknown entry type %d", out.Index, e.GetType())
	}
	if len(e.GetData()) == 0 {
		out.Kind = KindEmpty
		return out, nil
	}
	var r pb.InternalRaftRequest
	if err := proto.Unmarshal(e.GetData(), &r); err != nil {
		// etcd before 3.6 also logs v2 store requests (member attributes,
		// the cluster version) as a bare etcdserverpb.Request, and applies
		// an entry that is not an InternalRaftRequest as one: they never
		// touch the v3 keyspace.
		if isV2Request(e.GetData()) {
			out.Other = "v2"
			return out, nil
		}
		return Entry{}, fmt.Errorf("raft entry %d: decode request: %w", out.Index, err)
	}
	out.Request = &r
	switch {
	case r.Put != nil:
		out.Kind = KindPut
	case r.DeleteRange != nil:
		out.Kind = KindDeleteRange
	case r.Txn != nil:
		out.Kind = KindTxn
	case r.LeaseGrant != nil:
		out.Kind = KindLeaseGrant
	case r.LeaseRevoke != nil:
		out.Kind = KindLeaseRevoke
	case r.Compaction != nil:
		out.Kind = KindCompaction
	case r.Range != nil:
		out.Other = "range"
	case r.Alarm != nil:
		out.Other = "alarm"
	case r.LeaseCheckpoint != nil:
		out.Other = "lease-checkpoint"
	case r.ClusterVersionSet != nil, r.ClusterMemberAttrSet != nil, r.DowngradeInfoSet != nil, r.DowngradeVersionTest != nil:
		out.Other = "cluster"
	case r.AuthEnable != nil, r.AuthDisable != nil, r.AuthStatus != nil, r.Authenticate != nil,
		r.AuthUserAdd != nil, r.AuthUserDelete != nil, r.AuthUserGet != nil, r.AuthUserChangePassword != nil,
		r.AuthUserGrantRole != nil, r.AuthUserRevokeRole != nil, r.AuthUserList != nil, r.AuthRoleList != nil,
		r.AuthRoleAdd != nil, r.AuthRoleDelete != nil, r.AuthRoleGet != nil, r.AuthRoleGrantPermission != nil,
		r.AuthRoleRevokePermission != nil:
		out.Other = "auth"
	default:
		out.Other = "unrecognized"
	}
	return out, nil
}

// isV2Request reports whether data is a v2 store request: the
// etcdserverpb.Request that etcd before 3.6 logged bare for member
// attributes and the cluster version (field 1 its ID, field 2 its method,
// "PUT", "DELETE", ...). etcd 3.7's API module no longer has the type, so
// the check reads the wire format itself.
func isV2Request(data []byte) bool {
	method := ""
	for len(data) > 0 {
		num, typ, n := protowire.ConsumeTag(data)
		if n < 0 {
			return false
		}
		data = data[n:]
		if num == 2 && typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(data)
			if n < 0 {
				return false
			}
			method, data = string(v), data[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, data)
		if n < 0 {
			return false
		}
		data = data[n:]
	}
	switch method {
	case "PUT", "POST", "DELETE", "GET", "QGET", "HEAD", "SYNC":
		return true
	}
	return false
}

// DecodeState decodes a state record's data.
func DecodeState(data []byte) (*raftpb.HardState, error) {
	var s raftpb.HardState
	if err := proto.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("decode raft hard state: %w", err)
	}
	return &s, nil
}
