// Package wal replays a member's write-ahead log into the keyspace it
// wrote, so that what a db has compacted away, an object deleted an hour
// ago, can be read again: every revision, with the outcome of the entry
// that made it. It answers as a store.Archive, over the log alone or
// joined with the member's db.
//
// # How a log entry becomes a revision
//
// walfile reads the segments with etcd's decoder and merges members' logs
// by raft index. step, in step.go, applies each entry's request as etcd's
// apply loop does, over a state that says what it knows of the keys,
// leases and revisions.
//
//   - A put, a delete range, or a transaction whose compares are
//     evaluated against the state before it, the branch taken then
//     checked and applied. Each applied request that changes a key makes
//     one main revision, its operations sub-revisions of it.
//   - A lease grant, a revoke that deletes the lease's keys in one
//     revision, a lease checkpoint, a compaction.
//   - Enabling authentication or raising an alarm changes rules that are
//     not modelled: revisions are no longer derived from that entry on.
//
// Where the state does not know what a rule needs, the outcome is unknown:
// step never guesses. A range delete or a revoke asks the state which keys
// it deletes; the state names those it knows and says whether there may be
// others, perhaps keys it cannot name. An entry applies only once the log
// records it committed; every write carries its entry's outcome.
//
// # Where the replay starts
//
//   - From raft index 1, OpenLogChecked without a db: an empty keyspace.
//   - From a db, OpenLogChecked with one: the entries after the db's
//     consistent index are replayed from the db's keys, leases and
//     revision (base.go).
//   - From an older snapshot checked against the current db: the replay
//     must reach the current db's state at its consistent index, or it is
//     refused naming the first key that differs (check.go).
//
// # The entries the db already holds: the prefix
//
// A member's log starts after its last raft snapshot, and its first
// entries are at or below the db's consistent index. They were applied,
// in revisions the db has usually compacted, from a state before the log
// that neither holds. Such an entry becomes a revision in two hops:
//
//  1. The db anchors it, in prefix_settle.go: a put whose key and value
//     the db holds at revision R, no other put of the log writing them,
//     made R.
//  2. Settle proves the rest from the anchors, in settle.go, calling step
//     over a state with unknowns, pxState in prefix_state.go. The entries
//     between two anchored revisions made exactly the revisions between:
//     where that is all of those that can make one, each did, and where
//     it is none, none did. Where a key's mod revision is known, step
//     decides a compare on it; where the keys a delete or a revoke finds
//     are known, whether it made a revision. A range delete or a revoke
//     whose revision is so proved, above the db's compaction, deleted the
//     keys the db holds deleted there.
//
// Every proof is local and holds in every state before the log that leads
// the entries to the db, with one premise: a lease the log grants is new,
// as etcd gives every grant a new id unless a client names one. What none
// proves is listed unknown, entry by entry in WALCoverage.PrefixUnknown. Where the entries before the first
// revision proved are not all settled, the revision before the log is
// known only between two bounds: a read between them is not established.
// A range delete, or the revoke of a lease from before the log, whose
// deletions the db compacted away may have deleted keys the log never
// names: step says so, and each is an item of WALCoverage.Unnamed. A db
// that holds, at the revisions the entries made, a write none of them
// makes is refused as another cluster's (prefix_foreign.go).
//
// # A point in time
//
// Over an older snapshot whose consistent index the log continues, every
// later entry is replayed exactly by step, so the keyspace at any later
// raft index is known revision by revision: PointInTime, in pit.go, with
// the lease changes and the compaction. store.WritePointInTime writes it
// as an etcd snapshot. It is refused where any entry up to the index is
// not established, and where the log does not reach it.
package wal
