package walread

import (
	"fmt"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3/raftpb"
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

// DecodeState decodes a state record's data.
func DecodeState(data []byte) (*raftpb.HardState, error) {
	var s raftpb.HardState
	if err := proto.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("decode raft hard state: %w", err)
	}
	return &s, nil
}
