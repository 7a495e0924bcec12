package main

import (
	"context"
	"errors"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.etcd.io/etcd/server/v3/storage/wal/walpb"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"
)

// cmdWALMark sets VAR to the raft index the next write to the script's
// etcd gets: `walmark VAR`.
func cmdWALMark(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: walmark VAR")
	}
	sc := scripts.get(ts)
	if sc.c == nil {
		ts.Fatalf("walmark: no cluster; run etcd start first")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// A follower may not have appended the last entries yet: the highest
	// index any member reports (the leader's) is the log's.
	var last uint64
	for _, ep := range sc.c.Endpoints() {
		st, err := sc.cli.Status(ctx, ep)
		ts.Check(err)
		last = max(last, st.RaftIndex)
	}
	ts.Setenv(args[0], strconv.FormatUint(last+1, 10))
}

// cmdWALPurge writes into DST a copy of the wal directory SRC that starts
// at raft index FROM, as a member's log is after etcd snapshotted and
// purged the segments before it: `walpurge SRC DST FROM [TO]`. etcd's own
// wal package reads SRC and writes the copy (a snapshot record at FROM-1,
// none for FROM 1, the entries from FROM on, the last hard state). With
// TO, the copy ends at entry TO, its commit index no higher, as a copy of
// the log taken before the later entries were written.
func cmdWALPurge(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 && len(args) != 4 {
		ts.Fatalf("usage: walpurge SRC DST FROM [TO]")
	}
	from, err := strconv.ParseUint(args[2], 10, 64)
	ts.Check(err)
	to := uint64(math.MaxUint64)
	if len(args) == 4 {
		to, err = strconv.ParseUint(args[3], 10, 64)
		ts.Check(err)
	}
	lg := zap.NewNop()
	r, err := wal.OpenForRead(lg, ts.MkAbs(args[0]), &walpb.Snapshot{Index: new(uint64), Term: new(uint64)})
	ts.Check(err)
	meta, hs, ents, err := r.ReadAll()
	r.Close()
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		ts.Fatalf("walpurge: read %s: %v", args[0], err)
	}
	i := 0
	for i < len(ents) && ents[i].GetIndex() < from {
		i++
	}
	if (i == 0 && ents[0].GetIndex() != 1) || i == len(ents) || to < from {
		ts.Fatalf("walpurge from %d to %d: the log holds entries %d to %d", from, to, ents[0].GetIndex(), ents[len(ents)-1].GetIndex())
	}
	j := i
	for j < len(ents) && ents[j].GetIndex() <= to {
		j++
	}
	commit := min(hs.GetCommit(), to)
	hs.Commit = &commit
	w, err := wal.Create(lg, ts.MkAbs(args[1]), meta)
	ts.Check(err)
	defer w.Close()
	if i > 0 {
		index, term := ents[i-1].GetIndex(), ents[i-1].GetTerm()
		ts.Check(w.SaveSnapshot(&walpb.Snapshot{Index: &index, Term: &term, ConfState: &raftpb.ConfState{}}))
	}
	ts.Check(w.Save(hs, ents[i:j]))
}
