package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/kubernetes/scheme"
)

// oracleMode is one way of reading the log: the global flags that name
// the log and the db.
type oracleMode struct {
	name string
	args []string
	db   *boltDB // the db named
}

// oracleCheck runs etcdpvc's reads and compares each claim with the
// oracle.
type oracleCheck struct {
	t     *testing.T
	orc   *oracle
	since int64 // every revision after it is in the log
	tally *tally
}

// tally counts the claims: established and right, not established, and
// wrong (with what was claimed and what is true).
type tally struct {
	wrong  []wrongClaim
	errors []string           // the errors of runs that gave no answer, each once
	counts map[string]*[2]int // "mode: what" → established, not established
	shares map[string]*[2]int // "mode: what" → found, of
}

// wrongClaim is a claim that disagrees with the oracle: the command, in
// which mode, what it claimed and what is true.
type wrongClaim struct {
	mode, command, claim, truth string
}

// newTally is an empty tally.
func newTally() *tally {
	return &tally{counts: map[string]*[2]int{}, shares: map[string]*[2]int{}}
}

// count counts one claim of kind what: established (and true) or not.
func (ch *oracleCheck) count(m oracleMode, what string, established bool) {
	k := m.name + ": " + what
	if ch.tally.counts[k] == nil {
		ch.tally.counts[k] = new([2]int)
	}
	if established {
		ch.tally.counts[k][0]++
	} else {
		ch.tally.counts[k][1]++
	}
}

// share counts one of what the oracle says there is (a deletion, a
// deleted object), and whether etcdpvc established it.
func (ch *oracleCheck) share(m oracleMode, what string, found bool) {
	k := m.name + ": " + what
	if ch.tally.shares[k] == nil {
		ch.tally.shares[k] = new([2]int)
	}
	if found {
		ch.tally.shares[k][0]++
	}
	ch.tally.shares[k][1]++
}

// wrong records a claim that disagrees with the oracle.
func (ch *oracleCheck) wrong(m oracleMode, command, claim, truth string) {
	ch.tally.wrong = append(ch.tally.wrong, wrongClaim{m.name, command, claim, truth})
}

// run runs etcdpvc on the mode's log and db, offline.
func (ch *oracleCheck) run(m oracleMode, args ...string) result {
	ch.t.Helper()
	return runEtcdpvc(ch.t, nil, append(slices.Clone(m.args), args...)...)
}

// failed records a run that ended in an error, not an answer: a crash,
// or exit status 2 (which says the command line was wrong), is a wrong
// claim; another error is counted as an answer not given.
func (ch *oracleCheck) failed(m oracleMode, what, command string, r result) {
	if r.code == 2 || strings.Contains(r.stderr, "panic: ") {
		ch.wrong(m, command, fmt.Sprintf("exit %d: %s", r.code, firstLine(r.stderr)), "an answer (exit 0, 3 or 10)")
		return
	}
	ch.count(m, what+" (error exit)", false)
	k := fmt.Sprintf("%s: %s exit %d: %s", m.name, what, r.code, numberRE.ReplaceAllString(keyRE.ReplaceAllString(firstLine(r.stderr), "KEY"), "N"))
	if !slices.Contains(ch.tally.errors, k) {
		ch.tally.errors = append(ch.tally.errors, k)
	}
}

// firstLine is the error etcdpvc printed (or a panic's first line), else
// the first line of stderr.
func firstLine(s string) string {
	lines := strings.Split(s, "\n")
	for _, l := range lines {
		if strings.HasPrefix(l, "etcdpvc: error: ") || strings.HasPrefix(l, "panic: ") {
			return truncate(l, 200)
		}
	}
	for _, l := range lines {
		if strings.TrimSpace(l) != "" {
			return truncate(l, 200)
		}
	}
	return "(nothing on stderr)"
}

// truncate cuts s to n bytes, marking the cut.
func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// keys are the keys the test wrote, in order.
func (ch *oracleCheck) keys() []string {
	set := map[string]bool{}
	for _, e := range ch.orc.all() {
		if oracleKey(e.Key) {
			set[e.Key] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// objectArgs names the object at key as an operator would: RESOURCE NAME
// -n NAMESPACE.
func objectArgs(key string) []string {
	for resource, prefix := range map[string]string{"configmap": "/registry/configmaps/", "secret": "/registry/secrets/"} {
		if rest, ok := strings.CutPrefix(key, prefix); ok {
			if ns, name, ok := strings.Cut(rest, "/"); ok {
				return []string{resource, name, "-n", ns}
			}
		}
	}
	return []string{"--etcd-key", key}
}

// oracleKey reports whether the test wrote key.
func oracleKey(key string) bool {
	return strings.HasPrefix(key, "/registry/configmaps/"+oracleNS+"/") || strings.HasPrefix(key, "/registry/secrets/"+oracleNS+"/") || strings.HasPrefix(key, oracleRaw)
}

// inLog is key's events inside the log.
func (ch *oracleCheck) inLog(key string) []truthEvent {
	var out []truthEvent
	for _, e := range ch.orc.history(key) {
		if e.Rev > ch.since {
			out = append(out, e)
		}
	}
	return out
}

// lastDeletion is key's newest deletion inside the log (nil: none), and
// the event before it: the deleted incarnation's last value.
func (ch *oracleCheck) lastDeletion(key string) (del, before *truthEvent) {
	evs := ch.inLog(key)
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Deleted {
			return &evs[i], ch.orc.at(key, evs[i].Rev-1)
		}
	}
	return nil, nil
}

// describe says what an event is, for the table.
func describe(e *truthEvent) string {
	switch {
	case e == nil:
		return "no such key"
	case e.Deleted:
		return fmt.Sprintf("deleted at %d", e.Rev)
	}
	return fmt.Sprintf("put at %d (created %d, version %d, lease %x, uid %s)", e.Rev, e.CreateRevision, e.Version, e.Lease, uidOf(e.Value))
}

// decodeStored decodes a stored value as the apiserver does (protobuf or
// JSON).
func decodeStored(v []byte) (uid string, data map[string]string) {
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(v, nil, nil)
	if err != nil {
		return "?", nil
	}
	if a, err := meta.Accessor(obj); err == nil {
		uid = string(a.GetUID())
	}
	if cm, ok := obj.(*corev1.ConfigMap); ok {
		data = cm.Data
	}
	return uid, data
}

// uidOf is the uid of the object stored as v.
func uidOf(v []byte) string {
	uid, _ := decodeStored(v)
	return uid
}

// lsDeleted checks ls -A --deleted: every row listed is a deletion etcd
// made, with the revisions and uid of the incarnation it deleted and its
// re-creation (a row deleted at a revision not established, -1: a
// deletion of its incarnation follows it); a deletion inside the log left
// out with exit status 0 is a wrong claim (the listing says it is
// complete), and so is one with exit status 10 that neither such a row
// nor stderr names.
func (ch *oracleCheck) lsDeleted(m oracleMode) {
	const cmd = "ls -A --deleted -o json"
	r := ch.run(m, "ls", "-A", "--deleted", "-o", "json")
	if r.code != 0 && r.code != 10 {
		ch.failed(m, "ls --deleted rows", cmd, r)
		return
	}
	var list struct {
		Items []struct {
			Metadata struct {
				UID string `json:"uid"`
			} `json:"metadata"`
			Etcd struct {
				Key              string `json:"key"`
				ModRevision      int64  `json:"modRevision"`
				CreateRevision   int64  `json:"createRevision"`
				Version          int64  `json:"version"`
				DeleteRevision   int64  `json:"deleteRevision"`
				RecreateRevision int64  `json:"recreateRevision"`
			} `json:"etcd"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
		ch.wrong(m, cmd, "output not JSON: "+err.Error(), "a List")
		return
	}
	listed := map[string]map[int64]bool{}
	for _, it := range list.Items {
		e := it.Etcd
		if listed[e.Key] == nil {
			listed[e.Key] = map[int64]bool{}
		}
		listed[e.Key][e.DeleteRevision] = true
		claim := fmt.Sprintf("%s deleted at %d (mod %d, created %d, version %d, uid %s), re-created at %d", e.Key, e.DeleteRevision, e.ModRevision, e.CreateRevision, e.Version, it.Metadata.UID, e.RecreateRevision)
		if e.DeleteRevision == -1 {
			// Deleted at a revision not established: a deletion of the
			// incarnation the row holds must follow it.
			if why := ch.deletedAfter(e.Key, e.ModRevision, e.CreateRevision, e.Version, it.Metadata.UID); why != "" {
				ch.wrong(m, cmd, claim, why)
				continue
			}
		}
		if e.DeleteRevision <= 0 {
			ch.count(m, "ls --deleted rows", false)
			continue
		}
		del := ch.orc.eventAt(e.Key, e.DeleteRevision)
		if del == nil || !del.Deleted {
			ch.wrong(m, cmd, claim, fmt.Sprintf("revision %d: %s", e.DeleteRevision, describe(ch.orc.at(e.Key, e.DeleteRevision))))
			continue
		}
		before := ch.orc.at(e.Key, e.DeleteRevision-1)
		var next *truthEvent
		for _, x := range ch.orc.history(e.Key) {
			if x.Rev > e.DeleteRevision {
				next = &x
				break
			}
		}
		switch {
		case before == nil || before.Deleted || !agree(e.ModRevision, before.Rev) || !agree(e.CreateRevision, before.CreateRevision) || !agree(e.Version, before.Version) ||
			(it.Metadata.UID != "" && it.Metadata.UID != uidOf(before.Value)):
			ch.wrong(m, cmd, claim, "the incarnation deleted: "+describe(before))
		case e.RecreateRevision == -1, e.ModRevision == 0, e.CreateRevision == 0, e.Version == 0:
			ch.count(m, "ls --deleted rows", false)
		case e.RecreateRevision == 0 && next != nil, e.RecreateRevision > 0 && (next == nil || next.Rev != e.RecreateRevision):
			ch.wrong(m, cmd, claim, "after the deletion: "+describe(next))
		default:
			ch.count(m, "ls --deleted rows", true)
		}
	}
	for _, key := range ch.keys() {
		del, before := ch.lastDeletion(key)
		if del == nil {
			continue
		}
		found := listed[key][del.Rev]
		ch.share(m, "deletions listed", found)
		switch {
		case found, listed[key][-1]:
		case r.code == 0:
			ch.wrong(m, cmd, fmt.Sprintf("exit 0, %s not listed", key), describe(del))
		case !mentions(r.stderr, key, before):
			ch.wrong(m, cmd, fmt.Sprintf("exit 10, %s neither listed nor named as maybe deleted (no key, prefix or lease of it on stderr)", key), describe(del))
		default:
			ch.count(m, "ls --deleted rows", false)
		}
	}
}

// deletedAfter says why a row claiming key deleted at a revision not
// established is wrong: the incarnation it holds (its mod revision,
// create revision, version and uid where stated) is not etcd's, or etcd
// did not delete the key after it ("": the claim holds).
func (ch *oracleCheck) deletedAfter(key string, mod, create, version int64, uid string) string {
	var after int64
	if mod > 0 {
		ev := ch.orc.eventAt(key, mod)
		if ev == nil || ev.Deleted || !agree(create, ev.CreateRevision) || !agree(version, ev.Version) || uid != "" && uid != uidOf(ev.Value) {
			return fmt.Sprintf("revision %d: %s", mod, describe(ch.orc.at(key, mod)))
		}
		after = mod
	}
	for _, x := range ch.orc.history(key) {
		if x.Rev > after && x.Deleted {
			return ""
		}
	}
	return fmt.Sprintf("no deletion of it after revision %d", after)
}

// mentions reports whether what etcdpvc said it could not establish
// covers key: the key, a prefix of it under a resource, the lease it was
// attached to, or every object the log's entries deleted (when their
// outcomes are not established as a whole).
func mentions(stderr, key string, before *truthEvent) bool {
	if strings.Contains(stderr, "objects they deleted") {
		return true
	}
	for _, tok := range keyRE.FindAllString(stderr, -1) {
		tok = strings.TrimRight(tok, ".,;)'\"")
		if strings.HasPrefix(key, tok) && strings.Count(tok, "/") >= 3 {
			return true
		}
	}
	return before != nil && before.Lease != 0 && (strings.Contains(stderr, fmt.Sprintf("%x", before.Lease)) || strings.Contains(stderr, fmt.Sprint(before.Lease)))
}

// agree reports whether a claimed revision or version is the true one,
// or 0: not stated (etcd gives none that is 0).
func agree(claimed, truth int64) bool {
	return claimed == 0 || claimed == truth
}

// history checks history --etcd-key KEY -o json: each row with a revision
// is etcd's event at that revision; every event inside the log is a row,
// or a row says it may be (outcome unknown, or applied at a revision not
// established); "not found" is wrong when the log changed the key.
func (ch *oracleCheck) history(m oracleMode, key string) {
	args := append(append([]string{"history"}, objectArgs(key)...), "-o", "json")
	cmd := strings.Join(args, " ")
	r := ch.run(m, args...)
	evs := ch.inLog(key)
	switch r.code {
	case 3:
		if len(evs) > 0 {
			ch.wrong(m, cmd, "not found (exit 3)", fmt.Sprintf("%d events in the log, the last %s", len(evs), describe(&evs[len(evs)-1])))
		} else {
			ch.count(m, "history rows", true)
		}
		return
	case 10:
		if strings.TrimSpace(r.stdout) == "" {
			// Nothing of the history is established: what may have
			// happened to the key is on stderr.
			ch.count(m, "history rows", false)
			return
		}
	case 0:
	default:
		ch.failed(m, "history rows", cmd, r)
		return
	}
	var rep struct {
		Rows []struct {
			Revision       int64  `json:"revision"`
			Version        int64  `json:"version"`
			CreateRevision int64  `json:"createRevision"`
			Lease          int64  `json:"lease"`
			Deleted        bool   `json:"deleted"`
			Index          uint64 `json:"index"`
			Outcome        string `json:"outcome"`
		} `json:"events"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		ch.wrong(m, cmd, "output not JSON: "+err.Error(), "a history")
		return
	}
	claimed := map[int64]bool{}
	open := 0
	for _, row := range rep.Rows {
		switch {
		case row.Outcome == "unknown", row.Outcome == "applied" && row.Revision == 0:
			open++
			ch.count(m, "history rows", false)
			continue
		case row.Outcome == "not applied":
			// Checked below: an event left without a row.
			continue
		}
		claim := fmt.Sprintf("entry %d: revision %d, deleted %v, created %d, version %d, lease %x", row.Index, row.Revision, row.Deleted, row.CreateRevision, row.Version, row.Lease)
		ev := ch.orc.eventAt(key, row.Revision)
		switch {
		case ev == nil:
			ch.wrong(m, cmd, claim, fmt.Sprintf("revision %d did not change the key; at it: %s", row.Revision, describe(ch.orc.at(key, row.Revision))))
		case ev.Deleted != row.Deleted || !ev.Deleted && (!agree(row.Version, ev.Version) || !agree(row.CreateRevision, ev.CreateRevision) || ev.Lease != row.Lease):
			ch.wrong(m, cmd, claim, describe(ev))
		case !ev.Deleted && (row.Version == 0 || row.CreateRevision == 0):
			claimed[row.Revision] = true
			ch.count(m, "history rows", false)
		default:
			claimed[row.Revision] = true
			ch.count(m, "history rows", true)
		}
	}
	for _, ev := range evs {
		switch {
		case claimed[ev.Rev]:
		case open > 0 || r.code == 10:
			ch.count(m, "history rows", false)
		default:
			ch.wrong(m, cmd, fmt.Sprintf("no row for revision %d (exit %d)", ev.Rev, r.code), describe(&ev))
		}
	}
}

// getRev checks get --rev R -o raw at each revision the log changed the
// key and just before each deletion.
func (ch *oracleCheck) getRev(m oracleMode, key string) {
	var revs []int64
	for _, ev := range ch.inLog(key) {
		revs = append(revs, ev.Rev)
		if ev.Deleted {
			revs = append(revs, ev.Rev-1)
		}
	}
	slices.Sort(revs)
	for _, rev := range slices.Compact(revs) {
		ch.getAt(m, key, "--rev", rev, rev)
	}
}

// getIndex checks get --index N -o raw at the consistent index of each db
// read: its revision is the oracle's truth for that index.
func (ch *oracleCheck) getIndex(m oracleMode, key string, points []*boltDB) {
	for _, p := range points {
		ch.getAt(m, key, "--index", int64(p.ConsistentIndex), p.Revision)
	}
}

// getAt runs get FLAG N -o raw and compares it with the key at revision
// rev.
func (ch *oracleCheck) getAt(m oracleMode, key, flag string, n, rev int64) {
	args := append(append([]string{"get"}, objectArgs(key)...), flag, strconv.FormatInt(n, 10), "-o", "raw")
	cmd := strings.Join(args, " ")
	what := "get " + flag
	r := ch.run(m, args...)
	truth := ch.orc.at(key, rev)
	live := truth != nil && !truth.Deleted
	switch r.code {
	case 0:
		switch {
		case !live:
			ch.wrong(m, cmd, fmt.Sprintf("a value (uid %s)", uidOf([]byte(r.stdout))), fmt.Sprintf("at revision %d: %s", rev, describe(truth)))
		case !bytes.Equal([]byte(r.stdout), truth.Value):
			ch.wrong(m, cmd, fmt.Sprintf("a value (uid %s), not the one of revision %d", uidOf([]byte(r.stdout)), truth.Rev), fmt.Sprintf("at revision %d: %s", rev, describe(truth)))
		default:
			ch.count(m, what, true)
		}
	case 3:
		if live {
			ch.wrong(m, cmd, "not found (exit 3)", fmt.Sprintf("at revision %d: %s", rev, describe(truth)))
		} else {
			ch.count(m, what, true)
		}
	case 10:
		ch.count(m, what, false)
	default:
		ch.failed(m, what, cmd, r)
	}
}

var (
	keyRE    = regexp.MustCompile(`/registry/[^\s:]+`)
	numberRE = regexp.MustCompile(`\d+`)
)

var compactionRE = regexp.MustCompile(`compaction revision (\d+)`)

var recoveringRE = regexp.MustCompile(`was deleted at revision (\d+); recovering revision (\d+)`)

// recover checks recover --etcd-key KEY -o json (which writes nothing) of
// each key the log deleted: it recovers the deleted incarnation's last
// value, or refuses while another incarnation holds the name.
func (ch *oracleCheck) recover(m oracleMode, key string) {
	del, before := ch.lastDeletion(key)
	if del == nil {
		return
	}
	args := append(append([]string{"recover"}, objectArgs(key)...), "-o", "json")
	cmd := strings.Join(args, " ")
	hist := ch.orc.history(key)
	now := hist[len(hist)-1]
	recreated := !now.Deleted
	truth := fmt.Sprintf("the incarnation deleted at %d: %s", del.Rev, describe(before))
	if recreated {
		truth += "; re-created: " + describe(&now)
	}
	r := ch.run(m, args...)
	ok := false
	switch r.code {
	case 0:
		var obj struct {
			Metadata struct {
				UID string `json:"uid"`
			} `json:"metadata"`
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &obj); err != nil {
			ch.wrong(m, cmd, "output not JSON: "+err.Error(), truth)
			break
		}
		uid, data := decodeStored(before.Value)
		var compact bytes.Buffer
		_ = json.Compact(&compact, obj.Data)
		claim := fmt.Sprintf("uid %s, data %s", obj.Metadata.UID, compact.String())
		if sm := recoveringRE.FindStringSubmatch(r.stderr); sm != nil {
			claim = fmt.Sprintf("deleted at %s, recovering revision %s: %s", sm[1], sm[2], claim)
			if sm[1] != fmt.Sprint(del.Rev) || sm[2] != fmt.Sprint(before.Rev) {
				ch.wrong(m, cmd, claim, truth)
				break
			}
		}
		var got map[string]string
		if data != nil {
			_ = json.Unmarshal(obj.Data, &got)
		}
		if obj.Metadata.UID != uid || data != nil && !maps.Equal(got, data) {
			ch.wrong(m, cmd, claim, truth)
			break
		}
		ok = true
		ch.count(m, "recover", true)
	case 5:
		if recreated && strings.Contains(r.stderr, uidOf(now.Value)) {
			ch.count(m, "recover", true)
		} else {
			ch.count(m, "recover", false)
		}
	case 3:
		// Not found: honest when it says the value is not held, wrong when
		// it names another compaction than the db's.
		switch sm := compactionRE.FindStringSubmatch(r.stderr); {
		case sm != nil && sm[1] != fmt.Sprint(m.db.CompactRevision):
			ch.wrong(m, cmd, "not found: "+sm[0], fmt.Sprintf("the db is compacted at revision %d; %s", m.db.CompactRevision, truth))
		case strings.Contains(r.stderr, "is held") || strings.Contains(r.stderr, "compacted"):
			ch.count(m, "recover", false)
		default:
			ch.wrong(m, cmd, "not found (exit 3): "+firstLine(r.stderr), truth)
		}
	case 10:
		ch.count(m, "recover", false)
	default:
		ch.failed(m, "recover", cmd, r)
	}
	ch.share(m, "deleted objects recoverable", ok)
}

// snapshotIndex checks snapshot --index N --out over the older snapshot:
// the file holds, read with bbolt, the consistent index N and every
// revision etcd made up to the point (after the compaction it keeps),
// each as etcd's watch sent it.
func (ch *oracleCheck) snapshotIndex(m oracleMode, point *boltDB) {
	cmd := fmt.Sprintf("snapshot --index %d --out PIT", point.ConsistentIndex)
	out := filepath.Join(ch.t.TempDir(), "pit.db")
	r := ch.run(m, "snapshot", "--index", fmt.Sprint(point.ConsistentIndex), "--out", out)
	switch r.code {
	case 0:
	case 10:
		ch.count(m, "snapshot --index", false)
		return
	default:
		ch.failed(m, "snapshot --index", cmd, r)
		return
	}
	pit := readBoltDB(ch.t, out)
	if pit.ConsistentIndex != point.ConsistentIndex || pit.Revision != point.Revision {
		ch.wrong(m, cmd, fmt.Sprintf("consistent index %d, revision %d", pit.ConsistentIndex, pit.Revision), fmt.Sprintf("consistent index %d, revision %d", point.ConsistentIndex, point.Revision))
	}
	held := map[string]bool{}
	bad := 0
	for _, e := range pit.Events {
		held[fmt.Sprint(e.Key, "@", e.Rev)] = true
		if ev := ch.orc.eventAt(e.Key, e.Rev); ev == nil || !sameEvent(*ev, e) {
			bad++
			if bad <= 5 {
				ch.wrong(m, cmd, fmt.Sprintf("%s at %d: %s", e.Key, e.Rev, describe(&e)), describe(ev))
			}
		}
	}
	for _, e := range ch.orc.all() {
		if e.Rev > pit.CompactRevision && e.Rev <= point.Revision && !held[fmt.Sprint(e.Key, "@", e.Rev)] {
			bad++
			if bad <= 5 {
				ch.wrong(m, cmd, fmt.Sprintf("%s: no revision %d", e.Key, e.Rev), describe(&e))
			}
		}
	}
	if bad > 5 {
		ch.wrong(m, cmd, fmt.Sprintf("%d more revisions wrong or missing", bad-5), "etcd's")
	}
	ch.count(m, "snapshot --index", bad == 0)
}

// report logs the table of wrong claims and the shares established, and
// fails the test if any claim is wrong.
func (ch *oracleCheck) report(took time.Duration) {
	var b strings.Builder
	fmt.Fprintf(&b, "claims checked against the oracle (%s):\n", took.Round(time.Second))
	for _, k := range slices.Sorted(maps.Keys(ch.tally.counts)) {
		c := ch.tally.counts[k]
		fmt.Fprintf(&b, "  %-40s %4d established and true, %4d not established\n", k, c[0], c[1])
	}
	for _, k := range slices.Sorted(maps.Keys(ch.tally.shares)) {
		s := ch.tally.shares[k]
		fmt.Fprintf(&b, "  %-40s %d of %d (%d%%)\n", k, s[0], s[1], 100*s[0]/max(1, s[1]))
	}
	if len(ch.tally.errors) > 0 {
		fmt.Fprintf(&b, "errors instead of an answer (counted as not established):\n")
		for _, e := range ch.tally.errors {
			fmt.Fprintf(&b, "  %s\n", e)
		}
	}
	fmt.Fprintf(&b, "wrong claims: %d\n", len(ch.tally.wrong))
	// Runs that failed alike are one row, with how many and the first.
	type row struct {
		wrongClaim
		n int
	}
	var rows []*row
	seen := map[string]*row{}
	for _, w := range ch.tally.wrong {
		k := ""
		if strings.HasPrefix(w.claim, "exit ") {
			k = w.mode + "|" + strings.Fields(w.command)[0] + "|" + w.claim
		}
		if r := seen[k]; k != "" && r != nil {
			r.n++
			continue
		}
		r := &row{w, 1}
		rows = append(rows, r)
		if k != "" {
			seen[k] = r
		}
	}
	for i, r := range rows {
		more := ""
		if r.n > 1 {
			more = fmt.Sprintf(" (and %d more %s runs alike)", r.n-1, strings.Fields(r.command)[0])
		}
		fmt.Fprintf(&b, "  %2d. [%s] etcdpvc %s%s\n      claims: %s\n      truth:  %s\n", i+1, r.mode, r.command, more, r.claim, r.truth)
	}
	ch.t.Log(b.String())
	if len(ch.tally.wrong) > 0 {
		ch.t.Errorf("%d claims disagree with etcd's watch (the table above)", len(ch.tally.wrong))
	}
}

var (
	recoveredFromRE = regexp.MustCompile(`\(recovered from revision (\d+)\)`)
	diffUIDRE       = regexp.MustCompile(`(?m)^\+  uid: (\S+)$`)
)

// recoverDryRun checks recover --dry-run of each key the log deleted: the
// diff creates the deleted incarnation's last revision, with its uid, or
// it refuses while another incarnation holds the name.
func (ch *oracleCheck) recoverDryRun(m oracleMode, key string) {
	del, before := ch.lastDeletion(key)
	if del == nil {
		return
	}
	args := append(append([]string{"recover"}, objectArgs(key)...), "--dry-run")
	cmd := strings.Join(args, " ")
	hist := ch.orc.history(key)
	now := hist[len(hist)-1]
	truth := fmt.Sprintf("the incarnation deleted at %d: %s", del.Rev, describe(before))
	if !now.Deleted {
		truth += "; re-created: " + describe(&now)
	}
	r := ch.run(m, args...)
	switch r.code {
	case 0:
		rev, uid := recoveredFromRE.FindStringSubmatch(r.stdout), diffUIDRE.FindStringSubmatch(r.stdout)
		switch {
		case rev == nil || uid == nil:
			ch.wrong(m, cmd, "a diff without its revision or uid: "+firstLine(r.stdout), truth)
		case rev[1] != fmt.Sprint(before.Rev) || uid[1] != uidOf(before.Value):
			ch.wrong(m, cmd, fmt.Sprintf("creates revision %s, uid %s", rev[1], uid[1]), truth)
		default:
			ch.count(m, "recover --dry-run", true)
		}
	case 5:
		ch.count(m, "recover --dry-run", !now.Deleted && strings.Contains(r.stderr, uidOf(now.Value)))
	case 3:
		if sm := compactionRE.FindStringSubmatch(r.stderr); sm != nil && sm[1] != fmt.Sprint(m.db.CompactRevision) {
			ch.wrong(m, cmd, "not found: "+sm[0], fmt.Sprintf("the db is compacted at revision %d; %s", m.db.CompactRevision, truth))
		} else {
			ch.count(m, "recover --dry-run", false)
		}
	case 10:
		ch.count(m, "recover --dry-run", false)
	default:
		ch.failed(m, "recover --dry-run", cmd, r)
	}
}
