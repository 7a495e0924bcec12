package main

import (
	"context"
	"errors"
	"io"
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
	st, err := sc.cli.Status(ctx, sc.c.Endpoints()[0])
	ts.Check(err)
	ts.Setenv(args[0], strconv.FormatUint(st.RaftIndex+1, 10))
}

// cmdWALPurge writes into DST a copy of the wal directory SRC that starts
// at raft index FROM, as a member's log is after etcd snapshotted and
// purged the segments before it: `walpurge SRC DST FROM`. etcd's own wal
// package reads SRC and writes the copy (a snapshot record at FROM-1, the
// entries from FROM on, the last hard state).
func cmdWALPurge(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: walpurge SRC DST FROM")
	}
	from, err := strconv.ParseUint(args[2], 10, 64)
	ts.Check(err)
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
	if i == 0 || i == len(ents) {
		ts.Fatalf("walpurge from %d: the log holds entries %d to %d", from, ents[0].GetIndex(), ents[len(ents)-1].GetIndex())
	}
	w, err := wal.Create(lg, ts.MkAbs(args[1]), meta)
	ts.Check(err)
	defer w.Close()
	index, term := ents[i-1].GetIndex(), ents[i-1].GetTerm()
	ts.Check(w.SaveSnapshot(&walpb.Snapshot{Index: &index, Term: &term, ConfState: &raftpb.ConfState{}}))
	ts.Check(w.Save(hs, ents[i:]))
}
