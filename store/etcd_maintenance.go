package store

import (
	"context"
	"fmt"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Alarm is an alarm a member raised, as etcd's alarm list reports it.
type Alarm struct {
	MemberID uint64
	// Type is etcd's name of the alarm: "NOSPACE", "CORRUPT".
	Type string
}

// Alarms lists the alarms raised in the cluster.
func (e *Etcd) Alarms(ctx context.Context) ([]Alarm, error) {
	if err := e.kineRefuses("alarm list"); err != nil {
		return nil, err
	}
	var resp *clientv3.AlarmResponse
	err := e.rpc(ctx, func(ctx context.Context) error {
		var err error
		resp, err = e.cli.AlarmList(ctx)
		return err
	})
	if err != nil {
		return nil, rpcError("alarm list", err)
	}
	out := make([]Alarm, 0, len(resp.Alarms))
	for _, a := range resp.Alarms {
		out = append(out, Alarm{MemberID: a.MemberID, Type: a.Alarm.String()})
	}
	return out, nil
}

// DisarmNoSpace disarms the NOSPACE alarm member raised.
func (e *Etcd) DisarmNoSpace(ctx context.Context, member uint64) error {
	err := e.rpc(ctx, func(ctx context.Context) error {
		_, err := e.cli.AlarmDisarm(ctx, &clientv3.AlarmMember{MemberID: member, Alarm: etcdserverpb.AlarmType_NOSPACE})
		return err
	})
	if err != nil {
		return rpcError(fmt.Sprintf("disarm the NOSPACE alarm of member %x", member), err)
	}
	return nil
}

// Compact compacts the keyspace at rev and waits until every member has
// removed the revisions before it from its db (physical compaction), as
// kube-apiserver's compactor does without the wait. It is not bounded by
// CommandTimeout: a large compaction takes longer; ctx bounds it.
func (e *Etcd) Compact(ctx context.Context, rev int64) error {
	if _, err := e.cli.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil {
		return rpcError(fmt.Sprintf("compact at revision %d", rev), err)
	}
	return nil
}

// Defragment defragments the member at endpoint ep: it rewrites its db
// without the free pages, and blocks the member's reads and writes while
// it runs. It is not bounded by CommandTimeout; ctx bounds the wait, and a
// cancelled wait leaves etcd to finish the defragmentation on its own.
func (e *Etcd) Defragment(ctx context.Context, ep string) error {
	if err := e.kineRefuses("defragment " + ep); err != nil {
		return err
	}
	if _, err := e.cli.Defragment(ctx, ep); err != nil {
		return rpcError("defragment "+ep, err)
	}
	return nil
}
