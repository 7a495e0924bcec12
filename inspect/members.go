package inspect

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/etcdpvc/etcdpvc/resource"
	"github.com/etcdpvc/etcdpvc/store"
)

// Member divergence: the members of one etcd cluster hold the same
// keyspace (raft applies the same entries to each), so at one revision
// every member's keys, values and revisions, and etcd's hash of its key
// bucket (`etcdctl endpoint hashkv`), are the same. A member whose disk or
// a bug changed its copy differs. Members compares N ≥ 2 of them key by key
// at one revision and, with three or more, names the one that differs
// from the majority, when a majority establishes it.

// MemberSource is one member to compare: a db or snapshot file of it, or
// the live member read through a client of its endpoint alone.
type MemberSource struct {
	// Name names the member in the report: the file or the endpoint.
	Name string
	// Reader reads it; nil when it could not be opened (Err says why).
	Reader store.Reader
	Err    error
}

// MembersOptions tune Members.
type MembersOptions struct {
	// StorePrefix is the apiserver's --etcd-prefix ("/registry").
	StorePrefix string
	// ListPrefix is the key prefix compared (ending in "/"; "" every key).
	ListPrefix string
	// Match, when set, keeps only the keys it accepts.
	Match func(key string) bool
	// Rev is the one revision every member is read at (> 0).
	Rev int64
	// PageSize is the live etcd page size (0: the store's default).
	PageSize int64
}

// How a member differs from the majority (MemberDivergence.How).
const (
	MemberMissing = "missing" // the majority holds the key, the member does not
	MemberExtra   = "extra"   // the member holds a key the majority does not
	MemberChanged = "changed" // both hold it; the value or its revisions differ
)

// Member key states (MemberKeyState.State).
const (
	KeyPresent = "present"
	KeyAbsent  = "absent"
	// KeyUnknown: the member could not be read up to this key.
	KeyUnknown = "unknown"
)

// MemberKeyState is one member's state of one key.
type MemberKeyState struct {
	Member string `json:"member"`
	State  string `json:"state"`
	// The key's revisions, lease and value (present only).
	ModRevision    int64 `json:"modRevision,omitempty"`
	CreateRevision int64 `json:"createRevision,omitempty"`
	Version        int64 `json:"version,omitempty"`
	Lease          int64 `json:"lease,omitempty"`
	ValueBytes     int   `json:"valueBytes,omitempty"`
	// ValueSHA256 is the start of the value's sha256, to tell values
	// apart without printing them.
	ValueSHA256 string `json:"valueSHA256,omitempty"`
}

// MemberDivergence is a member that differs from the majority on a key.
type MemberDivergence struct {
	Member string `json:"member"`
	How    string `json:"how"`
	Detail string `json:"detail"`
}

// MemberRecord is a key the members do not all agree on.
type MemberRecord struct {
	Resource  string `json:"resource"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	Key       string `json:"key"`
	// Majority is how many members hold the state a strict majority of
	// the members compared holds (0: no strict majority).
	Majority int `json:"majority"`
	// Members is how many members were compared.
	Members int `json:"members"`
	// States holds each member's state, in the order given.
	States []MemberKeyState `json:"states"`
	// Diverged are the members that differ from the majority (none
	// without a majority).
	Diverged []MemberDivergence `json:"diverged,omitempty"`
}

// MemberResult is what was read of one member.
type MemberResult struct {
	Member string `json:"member"`
	// Keys counts the keys of the scope read from the member.
	Keys int `json:"keys"`
	// Minority counts the keys on which the member differs from the
	// majority.
	Minority int `json:"minority"`
	// Error says why the member could not be read, or not to the end
	// (its keys after the last one read are unknown).
	Error string `json:"error,omitempty"`
	// Err is that error (nil when read to the end).
	Err error `json:"-"`
	// HashKV is etcd's hash of the member's whole keyspace at the
	// revision compared (nil: HashError says why not).
	HashKV    *store.HashKV `json:"hashKV,omitempty"`
	HashError string        `json:"hashError,omitempty"`
	// ResourceHashes are HashKV's formula restricted to each resource's
	// keys (db files only; not hashes etcd computes): where two members
	// whose whole hashes differ disagree.
	ResourceHashes map[string]uint32 `json:"resourceHashes,omitempty"`
	read           bool
}

// MemberResourceTotal is one resource's differing keys.
type MemberResourceTotal struct {
	Resource string `json:"resource"`
	// Differ counts the keys of the resource the members do not all
	// agree on.
	Differ int `json:"differ"`
	// HashesDiffer: the members' per-resource hashes differ.
	HashesDiffer bool `json:"hashesDiffer,omitempty"`
}

// Outcomes of Members (MembersSummary.Outcome).
const (
	// MembersAgree: every key compared agrees (the verdict says whether
	// etcd's hashkv was compared too).
	MembersAgree = "agree"
	// MembersDiverged: the members named in Diverged differ from a strict
	// majority on every differing key, and etcd's hashkv says the same.
	MembersDiverged = "diverged"
	// MembersDiffer: the members differ, and which one diverged is not
	// established.
	MembersDiffer = "differ"
	// MembersIncomplete: a member could not be read (or not to the end).
	MembersIncomplete = "incomplete"
	// MembersNothingCompared: no key of the scope on any member, or
	// fewer than two members read: no verdict.
	MembersNothingCompared = "nothing-compared"
)

// MembersSummary is what Members compared and found.
type MembersSummary struct {
	// Revision is the revision every member was read at.
	Revision int64           `json:"revision"`
	Members  []*MemberResult `json:"members"`
	// Keys counts the distinct keys of the scope read from any member.
	Keys int `json:"keys"`
	// Differ counts the keys the members do not all agree on;
	// NoMajority those of them no strict majority agrees on.
	Differ     int `json:"differ"`
	NoMajority int `json:"noMajority"`
	// Unverified counts keys that agree on the members read while a
	// member could not be read up to them.
	Unverified int                    `json:"unverified,omitempty"`
	Totals     []*MemberResourceTotal `json:"totals"`
	// HashesEqual: every member's hashkv was read, all comparable and
	// equal.
	HashesEqual bool `json:"hashesEqual"`
	// Diverged names the members established as diverged.
	Diverged []string `json:"diverged,omitempty"`
	Outcome  string   `json:"outcome"`
	Verdict  string   `json:"verdict"`
}

// groupHasher is a source that hashes per resource (store.Bolt).
type groupHasher interface {
	HashKVGroups(ctx context.Context, rev int64, group func(key []byte) string) (store.HashKV, map[string]uint32, error)
}

// hasher is a source that knows its whole hash (store.Etcd of one
// endpoint).
type hasher interface {
	HashKV(ctx context.Context, rev int64) (store.HashKV, error)
}

// memberHashes fills each readable member's hashkv at rev, the members
// hashed at once.
func memberHashes(ctx context.Context, srcs []MemberSource, res []*MemberResult, storePrefix string, rev int64) {
	var wg sync.WaitGroup
	for i, s := range srcs {
		if s.Reader == nil {
			continue
		}
		r := res[i]
		wg.Go(func() {
			var h store.HashKV
			var err error
			switch hr := s.Reader.(type) {
			case groupHasher:
				var groups map[string]uint32
				h, groups, err = hr.HashKVGroups(ctx, rev, resourceGrouper(storePrefix))
				r.ResourceHashes = groups
			case hasher:
				h, err = hr.HashKV(ctx, rev)
			default:
				err = fmt.Errorf("%T cannot hash its keyspace", s.Reader)
			}
			if err != nil {
				r.HashError = err.Error()
				return
			}
			r.HashKV = &h
		})
	}
	wg.Wait()
}

// resourceGrouper names the resource of a raw etcd key as GroupOf does,
// remembering the answer per key directory (the resource of a key with a
// name is a function of the path before it).
func resourceGrouper(storePrefix string) func(key []byte) string {
	prefix := strings.TrimSuffix(storePrefix, "/") + "/"
	byDir := map[string]string{}
	return func(key []byte) string {
		i := bytes.LastIndexByte(key, '/')
		if i < 0 || i == len(key)-1 {
			return GroupOf(prefix, string(key))
		}
		if g, ok := byDir[string(key[:i+1])]; ok {
			return g
		}
		g := GroupOf(prefix, string(key))
		byDir[string(key[:i+1])] = g
		return g
	}
}

// memberState is one member's state of the key being compared.
type memberState struct {
	state string
	kv    *store.KeyValue
}

func (a memberState) equal(b memberState) bool {
	if a.state != b.state {
		return false
	}
	if a.state != KeyPresent {
		return true
	}
	x, y := a.kv, b.kv
	return x.ModRevision == y.ModRevision && x.CreateRevision == y.CreateRevision &&
		x.Version == y.Version && x.Lease == y.Lease && bytes.Equal(x.Value, y.Value)
}

// Members compares the members srcs at revision o.Rev, key by key under
// o.ListPrefix, in one pass over each (every member is listed in key order
// and the listings merged; nothing but the current key of each is held),
// and asks each for etcd's hashkv at that revision. It calls emit for each
// key the members do not all agree on (present on some and absent on
// others, or with another value, mod or create revision, version or
// lease), in key order, and returns the summary with its verdict. A
// member that cannot be read, or not to the end, is reported in its
// MemberResult and makes the outcome MembersIncomplete; the others are
// still compared. An error is returned only when the comparison itself
// stops (ctx, emit).
func Members(ctx context.Context, srcs []MemberSource, o MembersOptions, emit func(MemberRecord) error) (*MembersSummary, error) {
	n := len(srcs)
	sum := &MembersSummary{Revision: o.Rev, Totals: []*MemberResourceTotal{}}
	res := make([]*MemberResult, n)
	for i, s := range srcs {
		res[i] = &MemberResult{Member: s.Name}
		if s.Reader == nil {
			msg := "not opened"
			if s.Err != nil {
				msg = s.Err.Error()
			}
			res[i].Error, res[i].Err = msg, s.Err
		}
	}
	sum.Members = res
	if n < 2 {
		return sum, errors.New("compare members: give at least two")
	}
	readers := 0
	for _, s := range srcs {
		if s.Reader != nil {
			readers++
		}
	}
	if readers == 0 {
		verdict(sum)
		return sum, nil
	}
	if o.Rev <= 0 {
		return sum, errors.New("compare members: no revision to compare at")
	}
	memberHashes(ctx, srcs, res, o.StorePrefix, o.Rev)
	if err := ctx.Err(); err != nil {
		return sum, err
	}

	ls := make([]*listing, n)
	heads := make([]*store.KeyValue, n)
	failed := make([]bool, n)
	for i, s := range srcs {
		if s.Reader == nil {
			failed[i] = true
			continue
		}
		ls[i] = pullList(ctx, DiffSide{Reader: s.Reader, Rev: o.Rev}, o.ListPrefix, o.PageSize)
		defer ls[i].stop()
		heads[i] = ls[i].pull(o.Match)
	}
	totals := map[string]*MemberResourceTotal{}
	states := make([]memberState, n)
	var err error
	for err == nil {
		if err = ctx.Err(); err != nil {
			break
		}
		key, found := "", false
		for i, l := range ls {
			if failed[i] {
				continue
			}
			if heads[i] == nil {
				if l.err != nil {
					// Its keys from here on are unknown.
					failed[i] = true
					res[i].Error, res[i].Err = l.err.Error(), l.err
				}
				continue
			}
			if !found || heads[i].Key < key {
				key, found = heads[i].Key, true
			}
		}
		if !found {
			break
		}
		sum.Keys++
		for i := range states {
			switch {
			case failed[i]:
				states[i] = memberState{state: KeyUnknown}
			case heads[i] != nil && heads[i].Key == key:
				states[i] = memberState{state: KeyPresent, kv: heads[i]}
				res[i].Keys++
			default:
				states[i] = memberState{state: KeyAbsent}
			}
		}
		err = compareKey(o.StorePrefix, key, srcs, states, res, sum, totals, emit)
		for i := range heads {
			if states[i].state == KeyPresent {
				heads[i] = ls[i].pull(o.Match)
			}
		}
	}
	for i, l := range ls {
		if l != nil {
			l.stop()
			if l.err != nil && res[i].Error == "" {
				res[i].Error, res[i].Err = l.err.Error(), l.err
			}
			res[i].read = res[i].Error == ""
		}
	}
	if err != nil {
		return sum, err
	}
	for _, t := range totals {
		sum.Totals = append(sum.Totals, t)
	}
	markHashTotals(sum, totals)
	sort.Slice(sum.Totals, func(i, j int) bool { return sum.Totals[i].Resource < sum.Totals[j].Resource })
	verdict(sum)
	return sum, nil
}

// compareKey compares the members' states of key and emits a record when
// they do not all agree.
func compareKey(storePrefix, key string, srcs []MemberSource, states []memberState, res []*MemberResult, sum *MembersSummary, totals map[string]*MemberResourceTotal, emit func(MemberRecord) error) error {
	n := len(states)
	first, unknown, agree := -1, false, true
	for i, s := range states {
		if s.state == KeyUnknown {
			unknown = true
			continue
		}
		if first < 0 {
			first = i
		} else if !s.equal(states[first]) {
			agree = false
		}
	}
	if agree {
		if unknown {
			sum.Unverified++
		}
		return nil
	}
	// Group the known states; a strict majority of all n members names
	// the state the key should have.
	group := make([]int, n)
	var size []int
	for i, s := range states {
		group[i] = -1
		if s.state == KeyUnknown {
			continue
		}
		for j := 0; j < i; j++ {
			if group[j] >= 0 && s.equal(states[j]) {
				group[i] = group[j]
				break
			}
		}
		if group[i] < 0 {
			group[i] = len(size)
			size = append(size, 0)
		}
		size[group[i]]++
	}
	major := -1
	for g, c := range size {
		if 2*c > n {
			major = g
		}
	}
	rec := MemberRecord{Key: key, Members: n}
	if r, ns, name, ok := resource.ParseKey(storePrefix, key); ok {
		rec.Resource, rec.Namespace, rec.Name = r.String(), ns, name
	} else {
		rec.Resource, rec.Name = GroupOf(strings.TrimSuffix(storePrefix, "/")+"/", key), key
	}
	for i, s := range states {
		ks := MemberKeyState{Member: srcs[i].Name, State: s.state}
		if s.state == KeyPresent {
			ks.ModRevision, ks.CreateRevision, ks.Version, ks.Lease = s.kv.ModRevision, s.kv.CreateRevision, s.kv.Version, s.kv.Lease
			ks.ValueBytes = len(s.kv.Value)
			sh := sha256.Sum256(s.kv.Value)
			ks.ValueSHA256 = hex.EncodeToString(sh[:6])
		}
		rec.States = append(rec.States, ks)
	}
	t := totals[rec.Resource]
	if t == nil {
		t = &MemberResourceTotal{Resource: rec.Resource}
		totals[rec.Resource] = t
	}
	t.Differ++
	sum.Differ++
	if major < 0 {
		sum.NoMajority++
	} else {
		rec.Majority = size[major]
		var m int
		for i := range states {
			if group[i] == major {
				m = i
				break
			}
		}
		for i, s := range states {
			if s.state == KeyUnknown || group[i] == major {
				continue
			}
			res[i].Minority++
			rec.Diverged = append(rec.Diverged, divergence(srcs[i].Name, s, states[m], rec.Majority, n))
		}
	}
	return emit(rec)
}

// divergence says how state s of member differs from the majority's, m,
// held by k of n members.
func divergence(member string, s, m memberState, k, n int) MemberDivergence {
	d := MemberDivergence{Member: member}
	switch {
	case s.state == KeyAbsent:
		d.How = MemberMissing
		d.Detail = fmt.Sprintf("absent; %d of %d hold it at mod revision %d", k, n, m.kv.ModRevision)
	case m.state == KeyAbsent:
		d.How = MemberExtra
		d.Detail = fmt.Sprintf("held at mod revision %d; absent on %d of %d", s.kv.ModRevision, k, n)
	default:
		d.How = MemberChanged
		a, b := s.kv, m.kv
		var what []string
		if !bytes.Equal(a.Value, b.Value) {
			what = append(what, fmt.Sprintf("value %s, majority %s", valueWords(a.Value), valueWords(b.Value)))
		}
		for _, f := range []struct {
			name string
			x, y int64
		}{{"mod revision", a.ModRevision, b.ModRevision}, {"create revision", a.CreateRevision, b.CreateRevision}, {"version", a.Version, b.Version}} {
			if f.x != f.y {
				what = append(what, fmt.Sprintf("%s %d, majority %d", f.name, f.x, f.y))
			}
		}
		if a.Lease != b.Lease {
			what = append(what, fmt.Sprintf("lease %x, majority %x", a.Lease, b.Lease))
		}
		d.Detail = strings.Join(what, "; ") + fmt.Sprintf(" (%d of %d agree)", k, n)
	}
	return d
}

// valueWords names a value by its size and the start of its sha256.
func valueWords(v []byte) string {
	sh := sha256.Sum256(v)
	return fmt.Sprintf("%s (sha256 %s)", Count(len(v), "byte", "bytes"), hex.EncodeToString(sh[:6]))
}

// markHashTotals adds to the totals the resources whose per-resource
// hashes differ between members that have them, comparable.
func markHashTotals(sum *MembersSummary, totals map[string]*MemberResourceTotal) {
	var with []*MemberResult
	for _, r := range sum.Members {
		if r.HashKV != nil && r.ResourceHashes != nil {
			with = append(with, r)
		}
	}
	if len(with) < 2 {
		return
	}
	names := map[string]bool{}
	for _, r := range with {
		if !r.HashKV.Comparable(*with[0].HashKV) {
			return
		}
		for name := range r.ResourceHashes {
			names[name] = true
		}
	}
	for name := range names {
		h, ok := with[0].ResourceHashes[name]
		differ := false
		for _, r := range with[1:] {
			if g, has := r.ResourceHashes[name]; has != ok || g != h {
				differ = true
			}
		}
		if !differ {
			continue
		}
		t := totals[name]
		if t == nil {
			t = &MemberResourceTotal{Resource: name}
			totals[name] = t
			sum.Totals = append(sum.Totals, t)
		}
		t.HashesDiffer = true
	}
}

// hashVerdict compares the members' whole hashes: ok when every member's
// was read and all are comparable; then equal when they all are, and
// major the members of the hash a strict majority holds (nil: none).
// why says what kept them from being compared.
func hashVerdict(sum *MembersSummary) (ok, equal bool, major map[int]bool, why string) {
	ms := sum.Members
	for _, r := range ms {
		if r.HashKV == nil {
			return false, false, nil, fmt.Sprintf("no hashkv of %s (%s)", r.Member, whyNot(r.HashError))
		}
		if !r.HashKV.Comparable(*ms[0].HashKV) {
			return false, false, nil, fmt.Sprintf("the hashkv of %s (compaction %d, revision %d) and of %s (compaction %d, revision %d) hash different compactions and cannot be compared",
				ms[0].Member, ms[0].HashKV.CompactRevision, ms[0].HashKV.Revision, r.Member, r.HashKV.CompactRevision, r.HashKV.Revision)
		}
	}
	count := map[uint32]int{}
	for _, r := range ms {
		count[r.HashKV.Hash]++
	}
	for h, c := range count {
		if 2*c > len(ms) {
			major = map[int]bool{}
			for i, r := range ms {
				if r.HashKV.Hash == h {
					major[i] = true
				}
			}
		}
	}
	return true, len(count) == 1, major, ""
}

func whyNot(s string) string {
	if s == "" {
		return "unknown why"
	}
	return s
}

// verdict sets sum's outcome and verdict from what was compared.
func verdict(sum *MembersSummary) {
	n := len(sum.Members)
	var unread []string
	read := 0
	for _, r := range sum.Members {
		if r.read {
			read++
		} else {
			unread = append(unread, r.Member+" ("+r.Error+")")
		}
	}
	hashOK, hashEqual, hashMajor, hashWhy := hashVerdict(sum)
	sum.HashesEqual = hashOK && hashEqual
	keys := Count(sum.Keys, "key", "keys")
	switch {
	case len(unread) > 0 && (read < 2 || sum.Keys == 0):
		sum.Outcome = MembersIncomplete
		sum.Verdict = fmt.Sprintf("nothing compared: %s could not be read: %s: no verdict", Count(len(unread), "member", "members"), strings.Join(unread, "; "))
		return
	case len(unread) > 0:
		sum.Outcome = MembersIncomplete
		found := "no key differs among the members read"
		if sum.Differ > 0 {
			found = Count(sum.Differ, "key differs", "keys differ") + " (listed)"
		}
		sum.Verdict = fmt.Sprintf("incomplete: %s could not be read to the end: %s; %s: no verdict on the cluster",
			Count(len(unread), "member", "members"), strings.Join(unread, "; "), found)
		return
	case sum.Keys == 0:
		sum.Outcome = MembersNothingCompared
		h := ""
		if sum.HashesEqual {
			h = " (etcd's hashkv, which covers every key, is equal on all)"
		}
		sum.Verdict = "nothing compared: no key of the scope on any member: no verdict" + h
		return
	}
	if sum.Differ == 0 {
		switch {
		case hashOK && hashEqual:
			sum.Outcome = MembersAgree
			sum.Verdict = fmt.Sprintf("no divergence: the %d members agree on every one of the %s compared, and etcd's hashkv is equal on all (%08x)", n, keys, sum.Members[0].HashKV.Hash)
		case hashOK:
			sum.Outcome = MembersDiffer
			sum.Verdict = fmt.Sprintf("the %d members agree on every one of the %s compared, but etcd's hashkv differs (%s): they differ in keys outside the scope compared or in the history they keep (the per-resource hashes say where)", n, keys, oddHashes(sum, hashMajor))
		default:
			sum.Outcome = MembersAgree
			sum.Verdict = fmt.Sprintf("the %d members agree on every one of the %s compared; etcd's hashkv not compared: %s", n, keys, hashWhy)
		}
		return
	}
	sum.Outcome = MembersDiffer
	differ := Count(sum.Differ, "key", "keys")
	if n == 2 {
		sum.Verdict = fmt.Sprintf("the two members differ on %s of %s: with two members no majority can say which one diverged (compare a third member)", differ, keys)
		return
	}
	var minority []int
	for i, r := range sum.Members {
		if r.Minority > 0 {
			minority = append(minority, i)
		}
	}
	var names []string
	for _, i := range minority {
		names = append(names, fmt.Sprintf("%s (%s)", sum.Members[i].Member, Count(sum.Members[i].Minority, "key", "keys")))
	}
	why := ""
	switch {
	case sum.NoMajority > 0:
		why = fmt.Sprintf("no strict majority agrees on %s", Count(sum.NoMajority, "key", "keys"))
	case !hashOK:
		why = "etcd's hashkv does not confirm it: " + hashWhy
	case hashMajor == nil:
		why = "no strict majority of the members has the same hashkv"
	default:
		for i := range sum.Members {
			inMinority := sum.Members[i].Minority > 0
			if inMinority == hashMajor[i] {
				why = fmt.Sprintf("etcd's hashkv does not single out the same members (%s)", oddHashes(sum, hashMajor))
				break
			}
		}
	}
	if why == "" {
		sum.Outcome = MembersDiverged
		for _, i := range minority {
			sum.Diverged = append(sum.Diverged, sum.Members[i].Member)
		}
		agree := n - len(minority)
		var others []string
		for _, r := range sum.Members {
			if r.Minority == 0 {
				others = append(others, r.Member)
			}
		}
		verb := "differs"
		if len(sum.Diverged) > 1 {
			verb = "differ"
		}
		sum.Verdict = fmt.Sprintf("diverged: %s %s from the majority on %s; %s (%d of %d) agree with each other on every one of the %s and on etcd's hashkv (%08x)",
			strings.Join(sum.Diverged, ", "), verb, differ, strings.Join(others, ", "), agree, n, keys, sum.Members[firstOf(hashMajor, n)].HashKV.Hash)
		return
	}
	in := ""
	if len(names) > 0 {
		in = "; in the minority: " + strings.Join(names, ", ")
	}
	sum.Verdict = fmt.Sprintf("the members differ on %s of %s%s; which member diverged is not established: %s", differ, keys, in, why)
}

// firstOf is the first member index in set.
func firstOf(set map[int]bool, n int) int {
	for i := range n {
		if set[i] {
			return i
		}
	}
	return 0
}

// oddHashes lists each member's hash, marking those outside the majority.
func oddHashes(sum *MembersSummary, major map[int]bool) string {
	var parts []string
	for i, r := range sum.Members {
		p := fmt.Sprintf("%s %08x", r.Member, r.HashKV.Hash)
		if major != nil && !major[i] {
			p += " (not the majority's)"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}

// Kinds of a member record's text line.
const (
	lineMissing = "MISSING"
	lineExtra   = "EXTRA"
	lineChanged = "CHANGED"
	lineSplit   = "SPLIT"
	lineDiffers = "DIFFERS"
)

// Lines are the record's text lines: with a majority, one per member
// that differs from it (MISSING, EXTRA, CHANGED, the member, the object,
// how); without one, a single line with every member's state (SPLIT, or
// DIFFERS with two members, where no majority can be).
func (r MemberRecord) Lines() []string {
	obj := fmt.Sprintf("%s %s %s", r.Resource, dash(r.Namespace), r.Name)
	if r.Majority > 0 {
		var out []string
		for _, d := range r.Diverged {
			kind := map[string]string{MemberMissing: lineMissing, MemberExtra: lineExtra, MemberChanged: lineChanged}[d.How]
			out = append(out, fmt.Sprintf("%-8s %s  %s  %s", kind, d.Member, obj, d.Detail))
		}
		return out
	}
	kind := lineSplit
	if r.Members == 2 {
		kind = lineDiffers
	}
	var st []string
	for _, s := range r.States {
		switch s.State {
		case KeyPresent:
			st = append(st, fmt.Sprintf("%s: mod revision %d, %s (sha256 %s)", s.Member, s.ModRevision, Count(s.ValueBytes, "byte", "bytes"), s.ValueSHA256))
		default:
			st = append(st, s.Member+": "+s.State)
		}
	}
	return []string{fmt.Sprintf("%-8s -  %s  %s", kind, obj, strings.Join(st, "; "))}
}

// MembersWriter writes a member comparison as it comes: as text, the
// records' lines, then a table of the members, the resources that differ
// and the verdict; or as JSON, one object a line ("type": "key" per
// record, "member" per member, "total" per resource, then one "summary").
type MembersWriter struct {
	W    io.Writer
	JSON bool
}

// Record writes one record.
func (w MembersWriter) Record(r MemberRecord) error {
	if w.JSON {
		return w.json(struct {
			Type string `json:"type"`
			MemberRecord
		}{"key", r})
	}
	for _, l := range r.Lines() {
		if _, err := fmt.Fprintln(w.W, l); err != nil {
			return err
		}
	}
	return nil
}

// Summary writes the members, the totals per resource and the verdict.
func (w MembersWriter) Summary(sum *MembersSummary) error {
	if w.JSON {
		for _, m := range sum.Members {
			if err := w.json(struct {
				Type string `json:"type"`
				*MemberResult
			}{"member", m}); err != nil {
				return err
			}
		}
		for _, t := range sum.Totals {
			if err := w.json(struct {
				Type string `json:"type"`
				*MemberResourceTotal
			}{"total", t}); err != nil {
				return err
			}
		}
		return w.json(struct {
			Type string `json:"type"`
			*MembersSummary
		}{"summary", sum})
	}
	if sum.Differ > 0 {
		fmt.Fprintln(w.W)
	}
	tw := tabwriter.NewWriter(w.W, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "MEMBER\tKEYS\tMINORITY\tHASHKV\tCOMPACT REV\tHASH REV\tREAD")
	for _, m := range sum.Members {
		h, c, r := "-", "-", "-"
		if m.HashKV != nil {
			h, c, r = fmt.Sprintf("%08x", m.HashKV.Hash), fmt.Sprint(m.HashKV.CompactRevision), fmt.Sprint(m.HashKV.Revision)
		}
		read := "ok"
		if m.Error != "" {
			read = "failed: " + m.Error
		}
		if m.HashError != "" {
			read += "; hashkv failed: " + m.HashError
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\n", m.Member, m.Keys, m.Minority, h, c, r, read)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, t := range sum.Totals {
		line := fmt.Sprintf("total %s: %s", t.Resource, Count(t.Differ, "key differs", "keys differ"))
		if t.HashesDiffer {
			line += fmt.Sprintf("; per-resource hashes: %s", resourceHashes(sum, t.Resource))
		}
		if _, err := fmt.Fprintln(w.W, line); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w.W, "compared %s of %d members at revision %d: %s\n", Count(sum.Keys, "key", "keys"), len(sum.Members), sum.Revision, sum.Verdict)
	return err
}

// resourceHashes lists each member's hash of resource res.
func resourceHashes(sum *MembersSummary, res string) string {
	var parts []string
	for _, m := range sum.Members {
		if h, ok := m.ResourceHashes[res]; ok {
			parts = append(parts, fmt.Sprintf("%s %08x", m.Member, h))
		} else {
			parts = append(parts, m.Member+" none")
		}
	}
	return strings.Join(parts, ", ")
}

func (w MembersWriter) json(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.W.Write(append(b, '\n'))
	return err
}
