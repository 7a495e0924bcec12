package inspect

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

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

// Fields of a key that can differ between members
// (MemberDivergence.Differs), named as MemberKeyState's JSON names them.
const (
	FieldValue          = "value"
	FieldModRevision    = "modRevision"
	FieldCreateRevision = "createRevision"
	FieldVersion        = "version"
	FieldLease          = "lease"
)

// MemberDivergence is a member that differs from the majority on a key.
type MemberDivergence struct {
	Member string `json:"member"`
	How    string `json:"how"`
	// Differs names the fields that differ from the majority's
	// (MemberChanged only).
	Differs []string `json:"differs,omitempty"`
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

// Reasons of an outcome (MembersSummary.Reason).
const (
	// ReasonUnread: too few members were read to compare anything.
	ReasonUnread = "unread"
	// ReasonReadPartly: a member could not be read, or not to the end.
	ReasonReadPartly = "read-partly"
	// ReasonEmptyScope: no key of the scope on any member.
	ReasonEmptyScope = "empty-scope"
	// ReasonHashEqual: every key agrees and etcd's hashkv is equal on all.
	ReasonHashEqual = "hashkv-equal"
	// ReasonHashDiffers: every key compared agrees, etcd's hashkv does not.
	ReasonHashDiffers = "hashkv-differs"
	// ReasonHashNotCompared: the hashkvs could not all be read or compared.
	ReasonHashNotCompared = "hashkv-not-compared"
	// ReasonTwoMembers: two members differ; no majority can be.
	ReasonTwoMembers = "two-members"
	// ReasonNoMajority: no strict majority agrees on some differing key.
	ReasonNoMajority = "no-majority"
	// ReasonNoHashMajority: no strict majority has the same hashkv.
	ReasonNoHashMajority = "no-hashkv-majority"
	// ReasonHashDisagrees: the hashkvs single out other members than the
	// keys do.
	ReasonHashDisagrees = "hashkv-disagrees"
	// ReasonMajority: a strict majority agrees on every differing key and
	// on the hashkv; the others diverged.
	ReasonMajority = "majority"
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
	// Reason names the fact that decided Outcome; MembersVerdict says it
	// in words.
	Reason string `json:"reason"`
}

// listHasher is a source that lists its keys and hashes its keyspace in
// one read (store.Bolt).
type listHasher interface {
	ListHashKV(ctx context.Context, prefix string, opts store.ListOptions, group func(key []byte) string, hashed func(store.HashKV, map[string]uint32, error), fn func(*store.KeyValue) error) (int64, error)
}

// hasher is a source that knows its whole hash (store.Etcd of one
// endpoint).
type hasher interface {
	HashKV(ctx context.Context, rev int64) (store.HashKV, error)
}

// memberHashes fills the hashkv at rev of each readable member that is
// not a listHasher (those are hashed as they are listed), the members
// hashed at once.
func memberHashes(ctx context.Context, srcs []MemberSource, res []*MemberResult, rev int64) {
	var wg sync.WaitGroup
	for i, s := range srcs {
		if _, lh := s.Reader.(listHasher); s.Reader == nil || lh {
			continue
		}
		r := res[i]
		wg.Go(func() {
			var h store.HashKV
			var err error
			if hr, ok := s.Reader.(hasher); ok {
				h, err = hr.HashKV(ctx, rev)
			} else {
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

// A listHashList hands over memberBatch keys at a time, or fewer whose
// values add up to memberBatchBytes.
const (
	memberBatch      = 256
	memberBatchBytes = 64 << 10
)

// keyBatch is keys a listHashList hands over, their values copied into
// buf.
type keyBatch struct {
	kvs []store.KeyValue
	buf []byte
}

// listHashList lists the keys of lh under prefix at rev, as pullList
// does, and fills r's hashkv (HashKV, its ResourceHashes, HashError) in
// the same read, before the first key is pulled. The read runs on a
// goroutine of its own, so that the members are read at once, and hands
// the keys over in batches, a few held ahead of the comparison (at most
// about 6 × 64 KiB of values, or one value larger), whose memory is used
// again: a key pulled is valid only until the next pull.
// r's hash fields are set once stop has returned.
func listHashList(ctx context.Context, lh listHasher, r *MemberResult, storePrefix, prefix string, rev int64) *listing {
	l := &listing{}
	const ahead = 4
	batches := make(chan *keyBatch, ahead)
	// free holds the batches pulled, for reuse.
	free := make(chan *keyBatch, ahead+2)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		defer close(batches)
		var b *keyBatch
		send := func() error {
			select {
			case batches <- b:
				b = nil
				return nil
			case <-quit:
				return errStopList
			}
		}
		hashed := func(h store.HashKV, groups map[string]uint32, err error) {
			r.ResourceHashes = groups
			if err != nil {
				r.HashError = err.Error()
				return
			}
			r.HashKV = &h
		}
		at, err := lh.ListHashKV(ctx, prefix, store.ListOptions{Revision: rev}, resourceGrouper(storePrefix), hashed, func(kv *store.KeyValue) error {
			if b == nil {
				select {
				case b = <-free:
					b.kvs, b.buf = b.kvs[:0], b.buf[:0]
				default:
					b = &keyBatch{kvs: make([]store.KeyValue, 0, memberBatch), buf: make([]byte, 0, memberBatchBytes)}
				}
			}
			c := *kv
			if kv.Value != nil {
				n := len(b.buf)
				b.buf = append(b.buf, kv.Value...)
				c.Value = b.buf[n:len(b.buf):len(b.buf)]
			}
			if b.kvs = append(b.kvs, c); len(b.kvs) == memberBatch || len(b.buf) >= memberBatchBytes {
				return send()
			}
			return nil
		})
		if err == nil && b != nil {
			err = send()
		}
		l.rev = at
		if err != nil && !errors.Is(err, errStopList) {
			l.err = err
		}
	}()
	var cur *keyBatch
	i := 0
	l.next = func() (*store.KeyValue, bool) {
		for cur == nil || i == len(cur.kvs) {
			if cur != nil {
				select {
				case free <- cur:
				default:
				}
			}
			var ok bool
			if cur, ok = <-batches; !ok {
				cur = nil
				return nil, false
			}
			i = 0
		}
		i++
		return &cur.kvs[i-1], true
	}
	var once sync.Once
	l.stop = func() {
		once.Do(func() {
			close(quit)
			<-done
		})
	}
	return l
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
// and the listings merged; nothing but a few hundred keys of each is
// held), and asks each for etcd's hashkv at that revision: a db file
// computes it in the read that lists it, the files each on a goroutine. It calls emit for each
// key the members do not all agree on (present on some and absent on
// others, or with another value, mod or create revision, version or
// lease), in key order, and returns the summary with its outcome. A
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
		decide(sum)
		return sum, nil
	}
	if o.Rev <= 0 {
		return sum, errors.New("compare members: no revision to compare at")
	}
	memberHashes(ctx, srcs, res, o.Rev)
	if err := ctx.Err(); err != nil {
		return sum, err
	}

	ls := make([]*listing, n)
	heads := make([]*store.KeyValue, n)
	failed := make([]bool, n)
	for i, s := range srcs {
		switch lh, ok := s.Reader.(listHasher); {
		case s.Reader == nil:
			failed[i] = true
			continue
		case ok:
			ls[i] = listHashList(ctx, lh, res[i], o.StorePrefix, o.ListPrefix, o.Rev)
		default:
			ls[i] = pullList(ctx, DiffSide{Reader: s.Reader, Rev: o.Rev}, o.ListPrefix, o.PageSize)
		}
		defer ls[i].stop()
	}
	for i, l := range ls {
		if l != nil {
			heads[i] = l.pull(o.Match)
		}
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
	decide(sum)
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
			rec.Diverged = append(rec.Diverged, divergence(srcs[i].Name, s, states[m]))
		}
	}
	return emit(rec)
}

// divergence says how state s of member differs from the majority's, m.
func divergence(member string, s, m memberState) MemberDivergence {
	d := MemberDivergence{Member: member}
	switch {
	case s.state == KeyAbsent:
		d.How = MemberMissing
	case m.state == KeyAbsent:
		d.How = MemberExtra
	default:
		d.How = MemberChanged
		a, b := s.kv, m.kv
		for _, f := range []struct {
			name   string
			differ bool
		}{
			{FieldValue, !bytes.Equal(a.Value, b.Value)},
			{FieldModRevision, a.ModRevision != b.ModRevision},
			{FieldCreateRevision, a.CreateRevision != b.CreateRevision},
			{FieldVersion, a.Version != b.Version},
			{FieldLease, a.Lease != b.Lease},
		} {
			if f.differ {
				d.Differs = append(d.Differs, f.name)
			}
		}
	}
	return d
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
func hashVerdict(sum *MembersSummary) (ok, equal bool, major map[int]bool) {
	ms := sum.Members
	for _, r := range ms {
		if r.HashKV == nil || !r.HashKV.Comparable(*ms[0].HashKV) {
			return false, false, nil
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
	return true, len(count) == 1, major
}

// decide sets sum's outcome, its reason and the members that diverged
// from what was compared.
func decide(sum *MembersSummary) {
	n := len(sum.Members)
	read := 0
	for _, r := range sum.Members {
		if r.read {
			read++
		}
	}
	hashOK, hashEqual, hashMajor := hashVerdict(sum)
	sum.HashesEqual = hashOK && hashEqual
	switch {
	case read < n && (read < 2 || sum.Keys == 0):
		sum.Outcome, sum.Reason = MembersIncomplete, ReasonUnread
	case read < n:
		sum.Outcome, sum.Reason = MembersIncomplete, ReasonReadPartly
	case sum.Keys == 0:
		sum.Outcome, sum.Reason = MembersNothingCompared, ReasonEmptyScope
	case sum.Differ == 0 && hashOK && hashEqual:
		sum.Outcome, sum.Reason = MembersAgree, ReasonHashEqual
	case sum.Differ == 0 && hashOK:
		sum.Outcome, sum.Reason = MembersDiffer, ReasonHashDiffers
	case sum.Differ == 0:
		sum.Outcome, sum.Reason = MembersAgree, ReasonHashNotCompared
	case n == 2:
		sum.Outcome, sum.Reason = MembersDiffer, ReasonTwoMembers
	case sum.NoMajority > 0:
		sum.Outcome, sum.Reason = MembersDiffer, ReasonNoMajority
	case !hashOK:
		sum.Outcome, sum.Reason = MembersDiffer, ReasonHashNotCompared
	case hashMajor == nil:
		sum.Outcome, sum.Reason = MembersDiffer, ReasonNoHashMajority
	case !sameMinority(sum, hashMajor):
		sum.Outcome, sum.Reason = MembersDiffer, ReasonHashDisagrees
	default:
		sum.Outcome, sum.Reason = MembersDiverged, ReasonMajority
		for _, r := range sum.Members {
			if r.Minority > 0 {
				sum.Diverged = append(sum.Diverged, r.Member)
			}
		}
	}
}

// sameMinority reports whether the members outside the hashkv's majority
// are the ones in the minority on some key.
func sameMinority(sum *MembersSummary, hashMajor map[int]bool) bool {
	for i, r := range sum.Members {
		if (r.Minority > 0) == hashMajor[i] {
			return false
		}
	}
	return true
}
