package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/snapshot"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/resource"
)

const prefix = "/registry"

// Manifest describes a generated data set.
type Manifest struct {
	Revisions   int64  `json:"revisions"`
	Live        int    `json:"liveObjects"`
	Terminating int    `json:"terminatingPVCs"`
	Recreated   int    `json:"recreatedKeys"`
	Deleted     int    `json:"deletedKeys"`
	Leased      int    `json:"leasedKeys"`
	HistoryKey  string `json:"historyKey"`
	// HistoryRevisions is how many revisions HistoryKey has.
	HistoryRevisions int      `json:"historyRevisions"`
	RecreatedSample  []string `json:"recreatedSample"`
	TerminatingKey   string   `json:"terminatingSample"`
	FileSize         int64    `json:"fileSize"`
	Seconds          float64  `json:"generateSeconds"`
	// BigNamespace, when not empty, holds BigNamespaceObjects objects
	// (-big-namespace), to measure recovering a large namespace.
	BigNamespace        string `json:"bigNamespace,omitempty"`
	BigNamespaceObjects int    `json:"bigNamespaceObjects,omitempty"`
	// SnapshotSaveSeconds is how long etcd's own snapshot save (what
	// `etcdctl snapshot save` runs) of the final data set took.
	SnapshotSaveSeconds float64 `json:"snapshotSaveSeconds"`
	// OlderRevision is the revision of the older snapshot (olderSnapshot).
	OlderRevision int64 `json:"olderRevision,omitempty"`
}

// template is one corpus object to vary.
type template struct {
	res    resource.Resource
	name   string
	obj    runtime.Object
	format codec.Format
	weight int
}

// weights is the mix of live objects, per resource plural (namespaces
// are added at one per 500 objects).
var weights = map[string]int{
	"events": 20, "pods": 15, "configmaps": 12, "secrets": 10, "leases": 5,
	"persistentvolumeclaims": 8, "persistentvolumes": 8, "services": 6, "serviceaccounts": 6,
	"deployments": 4, "statefulsets": 2, "clusterroles": 1,
}

func corpusDir() (string, error) {
	for _, d := range []string{"fixtures/corpus/plain", "../../fixtures/corpus/plain"} {
		if exists(d) {
			return d, nil
		}
	}
	return "", errors.New("fixtures/corpus/plain not found: run from the repository root")
}

// loadTemplates reads fixtures/corpus/plain: each .bin with the key its
// .meta.txt names.
func loadTemplates() ([]*template, *template, error) {
	dir, err := corpusDir()
	if err != nil {
		return nil, nil, err
	}
	metas, _ := filepath.Glob(filepath.Join(dir, "*.meta.txt"))
	var out []*template
	var ns *template
	seen := map[string]bool{}
	for _, m := range metas {
		if strings.Contains(m, "terminating") {
			continue // Terminating claims are made from bound ones
		}
		b, err := os.ReadFile(m)
		if err != nil {
			return nil, nil, err
		}
		var key string
		for _, l := range strings.Split(string(b), "\n") {
			if k, ok := strings.CutPrefix(l, "key="); ok {
				key = k
			}
		}
		r, _, name, ok := resource.ParseKey(prefix, key)
		if !ok {
			continue
		}
		value, err := os.ReadFile(strings.TrimSuffix(m, ".meta.txt") + ".bin")
		if err != nil {
			return nil, nil, err
		}
		obj, err := codec.Decode(value)
		if err != nil || obj.Typed == nil {
			continue
		}
		t := &template{res: r, name: name, obj: obj.Typed, format: obj.Format, weight: weights[r.Plural]}
		if r.Plural == "namespaces" {
			ns = t
			continue
		}
		if t.weight == 0 || seen[r.Plural] {
			continue
		}
		seen[r.Plural] = true
		out = append(out, t)
	}
	if ns == nil || len(out) == 0 {
		return nil, nil, fmt.Errorf("no usable templates in %s", dir)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].res.Plural < out[j].res.Plural })
	return out, ns, nil
}

// object is one generated object.
type object struct {
	key   string
	t     *template
	value []byte
	lease clientv3.LeaseID
}

type generator struct {
	rng       *rand.Rand
	templates []*template
	total     int
	ns        *template
	nsCount   int
	created   time.Time
}

func (g *generator) uid() types.UID {
	a, b := g.rng.Uint64(), g.rng.Uint64()
	return types.UID(fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", a>>32, a>>16&0xffff, a&0xfff, b>>48&0xfff, b&0xffffffffffff))
}

func (g *generator) pick() *template {
	n := g.rng.IntN(g.total)
	for _, t := range g.templates {
		if n < t.weight {
			return t
		}
		n -= t.weight
	}
	return g.templates[0]
}

// make builds object i from t: a new name, namespace and uid; a payload
// for ConfigMaps and Secrets, so values have realistic sizes.
func (g *generator) make(t *template, i int, suffix string) (*object, error) {
	obj := t.obj.DeepCopyObject()
	acc, err := apimeta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	name := fmt.Sprintf("%s-%07d%s", t.name, i, suffix)
	ns := ""
	if t.res.Namespaced {
		ns = fmt.Sprintf("bench-%04d", i%g.nsCount)
	}
	acc.SetName(name)
	acc.SetNamespace(ns)
	acc.SetUID(g.uid())
	acc.SetCreationTimestamp(metav1.NewTime(g.created.Add(time.Duration(i) * time.Second)))
	acc.SetOwnerReferences(nil)
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		o.Data = map[string]string{"payload": strings.Repeat("x", 1024+g.rng.IntN(12288))}
	case *corev1.Secret:
		o.Data = map[string][]byte{"token": []byte(strings.Repeat("s", 64+g.rng.IntN(2048)))}
	case *corev1.PersistentVolumeClaim:
		o.Spec.VolumeName = "pv-" + name
	}
	return g.encode(t, obj, ns, name)
}

func (g *generator) encode(t *template, obj runtime.Object, ns, name string) (*object, error) {
	value, err := codec.EncodeTyped(obj, t.format)
	if err != nil {
		return nil, err
	}
	key, err := t.res.Key(prefix, ns, name)
	if err != nil {
		return nil, err
	}
	return &object{key: key, t: t, value: value}, nil
}

// terminating returns o's value with a deletionTimestamp, as a
// delete of a claim with the pvc-protection finalizer leaves it.
func terminating(o *object, at time.Time) ([]byte, error) {
	dec, err := codec.Decode(o.value)
	if err != nil {
		return nil, err
	}
	acc, err := apimeta.Accessor(dec.Typed)
	if err != nil {
		return nil, err
	}
	ts := metav1.NewTime(at)
	zero := int64(0)
	acc.SetDeletionTimestamp(&ts)
	acc.SetDeletionGracePeriodSeconds(&zero)
	acc.SetFinalizers([]string{"kubernetes.io/pvc-protection"})
	return codec.EncodeTyped(dec.Typed, dec.Format)
}

func generateMain(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("generate", flag.ContinueOnError)
	revisions := fs.Int("revisions", 1_000_000, "revisions to write")
	dir := fs.String("dir", defaultDir(), "where the data set is kept")
	workers := fs.Int("workers", 32, "concurrent writers")
	seed := fs.Uint64("seed", 1, "random seed")
	bigNS := fs.Int("big-namespace", 0, "also write namespace "+bigNamespace+" holding this many objects that recover namespace writes (configmaps, secrets, claims, services, serviceaccounts, deployments, statefulsets)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	dbPath, manPath := dataset(*dir, *revisions)
	if *bigNS > 0 {
		base := strings.TrimSuffix(dbPath, ".db") + fmt.Sprintf("-ns%d", *bigNS)
		dbPath, manPath = base+".db", base+".json"
	}
	if exists(dbPath) && exists(manPath) && exists(olderSnapshot(dbPath)) {
		fmt.Printf("%s exists; remove it to generate again\n", dbPath)
		return nil
	}
	if *revisions < 10_000 {
		return errors.New("-revisions must be at least 10000")
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	start := time.Now()
	templates, nsT, err := loadTemplates()
	if err != nil {
		return err
	}
	g := &generator{rng: rand.New(rand.NewPCG(*seed, 42)), templates: templates, ns: nsT, created: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	for _, t := range templates {
		g.total += t.weight
	}

	// The revision budget.
	R := *revisions
	scale := func(perMillion, min int) int { return max(min, perMillion*R/1_000_000) }
	live := R * 3 / 10
	g.nsCount = max(1, live/500)
	deletedPairs := R / 40
	recreated := scale(30, 5)
	term := scale(300, 10)
	hot := scale(2000, 100)
	updates := R - live - 2*deletedPairs - 3*recreated - term - hot
	objects := live - g.nsCount

	tmp, err := os.MkdirTemp(*dir, "etcd-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	e, cli, err := startEtcd(tmp)
	if err != nil {
		return err
	}
	defer e.Close()
	defer cli.Close()

	leases := make([]clientv3.LeaseID, 64)
	for i := range leases {
		l, err := cli.Grant(ctx, 7*24*3600)
		if err != nil {
			return err
		}
		leases[i] = l.ID
	}

	var written atomic.Int64
	run := func(phase string, n int, job func(i int) error) error {
		jobs := make(chan int, 1024)
		var wg sync.WaitGroup
		var firstErr error
		var once sync.Once
		for w := 0; w < *workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range jobs {
					if err := job(i); err != nil {
						once.Do(func() { firstErr = err })
					}
				}
			}()
		}
		t0 := time.Now()
		for i := 0; i < n; i++ {
			jobs <- i
		}
		close(jobs)
		wg.Wait()
		fmt.Fprintf(os.Stderr, "benchdata: %-12s %8d jobs in %6.1fs (%d revisions so far)\n", phase, n, time.Since(t0).Seconds(), written.Load())
		return firstErr
	}
	put := func(key string, value []byte, lease clientv3.LeaseID) error {
		var opts []clientv3.OpOption
		if lease != 0 {
			opts = append(opts, clientv3.WithLease(lease))
		}
		_, err := cli.Put(ctx, key, string(value), opts...)
		if err == nil {
			written.Add(1)
		}
		return err
	}
	del := func(key string) error {
		_, err := cli.Delete(ctx, key)
		if err == nil {
			written.Add(1)
		}
		return err
	}

	// Namespaces, then the live objects (generated up front, serially, for
	// a deterministic data set).
	nsObjs := make([]*object, g.nsCount)
	for i := range nsObjs {
		o, err := g.encodeNamespace(i)
		if err != nil {
			return err
		}
		nsObjs[i] = o
	}
	if err := run("namespaces", len(nsObjs), func(i int) error { return put(nsObjs[i].key, nsObjs[i].value, 0) }); err != nil {
		return err
	}
	objs := make([]*object, objects)
	var pvcs, leaseObjs []int
	leased := 0
	for i := range objs {
		o, err := g.make(g.pick(), i, "")
		if err != nil {
			return err
		}
		switch o.t.res.Plural {
		case "events":
			o.lease = leases[g.rng.IntN(len(leases))]
			leased++
		case "persistentvolumeclaims":
			pvcs = append(pvcs, i)
		case "leases":
			leaseObjs = append(leaseObjs, i)
		}
		objs[i] = o
	}
	if len(pvcs) < term || len(leaseObjs) == 0 {
		return fmt.Errorf("too few claims (%d) or leases for %d revisions", len(pvcs), R)
	}
	if err := run("create", len(objs), func(i int) error { return put(objs[i].key, objs[i].value, objs[i].lease) }); err != nil {
		return err
	}

	if *bigNS > 0 {
		big, err := g.bigNamespace(*bigNS)
		if err != nil {
			return err
		}
		if err := run("big-ns", len(big), func(i int) error { return put(big[i].key, big[i].value, 0) }); err != nil {
			return err
		}
	}

	// Updates: a third to leases (heartbeats), the rest anywhere. The value
	// changes by one annotation, edited at the wire level.
	targets := make([]int, updates)
	for i := range targets {
		if i%3 == 0 {
			targets[i] = leaseObjs[g.rng.IntN(len(leaseObjs))]
		} else {
			targets[i] = g.rng.IntN(len(objs))
		}
	}
	update := func(o *object, n int) error {
		v, err := codec.EditMeta(o.value, codec.MetaEdit{SetAnnotations: map[string]string{"bench.etcdpvc.io/generation": fmt.Sprint(n)}})
		if err != nil {
			return fmt.Errorf("update %s: %w", o.key, err)
		}
		return put(o.key, v, o.lease)
	}
	// The older snapshot, before the last tenth of the updates: inside the
	// log the member keeps at the end.
	cut := len(targets) * 9 / 10
	if err := run("update", cut, func(i int) error { return update(objs[targets[i]], i) }); err != nil {
		return err
	}
	cfg := clientv3.Config{Endpoints: cli.Endpoints(), DialTimeout: 10 * time.Second, Logger: zap.NewNop()}
	older := olderSnapshot(dbPath)
	_ = os.Remove(older + ".part")
	if _, err := snapshot.SaveWithVersion(ctx, zap.NewNop(), cfg, older+".part"); err != nil {
		return fmt.Errorf("save the older snapshot: %w", err)
	}
	if err := os.Rename(older+".part", older); err != nil {
		return err
	}
	olderRev := written.Load()
	if err := run("update", len(targets)-cut, func(i int) error { return update(objs[targets[cut+i]], cut+i) }); err != nil {
		return err
	}
	// One hot key with a long history, written in order.
	hotObj := objs[leaseObjs[0]]
	for i := 0; i < hot; i++ {
		if err := update(hotObj, updates+i); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "benchdata: hot key %s: %d updates\n", hotObj.key, hot)

	// Deleted objects: events created and deleted, with their leases.
	if err := run("delete", deletedPairs, func(i int) error {
		o, err := g.makeLocked(i)
		if err != nil {
			return err
		}
		if err := put(o.key, o.value, leases[i%len(leases)]); err != nil {
			return err
		}
		return del(o.key)
	}); err != nil {
		return err
	}

	// Keys deleted and created again with a new uid.
	var recreatedKeys []string
	var mu sync.Mutex
	if err := run("recreate", recreated, func(i int) error {
		first, second, err := g.makeRecreated(i)
		if err != nil {
			return err
		}
		if err := put(first.key, first.value, 0); err != nil {
			return err
		}
		if err := del(first.key); err != nil {
			return err
		}
		mu.Lock()
		recreatedKeys = append(recreatedKeys, first.key)
		mu.Unlock()
		return put(second.key, second.value, 0)
	}); err != nil {
		return err
	}

	// Terminating claims, last, so their newest revision is the deletion
	// and every earlier one is not.
	termAt := g.created.Add(400 * 24 * time.Hour)
	if err := run("terminating", term, func(i int) error {
		o := objs[pvcs[i]]
		v, err := terminating(o, termAt)
		if err != nil {
			return err
		}
		return put(o.key, v, 0)
	}); err != nil {
		return err
	}

	resp, err := cli.Get(ctx, "benchdata-probe")
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "benchdata: etcd at revision %d; saving the snapshot\n", resp.Header.Revision)
	part := dbPath + ".part"
	_ = os.Remove(part)
	t0 := time.Now()
	if _, err := snapshot.SaveWithVersion(ctx, zap.NewNop(), cfg, part); err != nil {
		return fmt.Errorf("save snapshot: %w", err)
	}
	saveSeconds := time.Since(t0).Seconds()
	if err := os.Rename(part, dbPath); err != nil {
		return err
	}
	if err := keepWAL(filepath.Join(tmp, "member", "wal"), walDir(dbPath)); err != nil {
		return fmt.Errorf("keep the write-ahead log: %w", err)
	}
	fi, err := os.Stat(dbPath)
	if err != nil {
		return err
	}
	sort.Strings(recreatedKeys)
	m := Manifest{
		Revisions: resp.Header.Revision, Live: live + recreated, Terminating: term, Recreated: recreated,
		Deleted: deletedPairs, Leased: leased, HistoryKey: hotObj.key, TerminatingKey: objs[pvcs[0]].key,
		RecreatedSample: recreatedKeys[:min(5, len(recreatedKeys))], FileSize: fi.Size(), Seconds: time.Since(start).Seconds(),
		SnapshotSaveSeconds: saveSeconds, OlderRevision: olderRev,
	}
	if *bigNS > 0 {
		m.BigNamespace, m.BigNamespaceObjects = bigNamespace, *bigNS
	}
	hist := 0
	for _, t := range targets {
		if objs[t] == hotObj {
			hist++
		}
	}
	m.HistoryRevisions = 1 + hist + hot
	b, _ := json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(manPath, append(b, '\n'), 0o644); err != nil {
		return err
	}
	w := bufio.NewWriter(os.Stdout)
	fmt.Fprintf(w, "%s: %d revisions, %.2f GB, in %.0fs\n%s\n", dbPath, m.Revisions, float64(m.FileSize)/1e9, m.Seconds, b)
	return w.Flush()
}

func (g *generator) encodeNamespace(i int) (*object, error) {
	obj := g.ns.obj.DeepCopyObject()
	acc, err := apimeta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	name := fmt.Sprintf("bench-%04d", i)
	acc.SetName(name)
	acc.SetUID(g.uid())
	acc.SetLabels(map[string]string{"kubernetes.io/metadata.name": name})
	return g.encode(g.ns, obj, "", name)
}

// bigNamespace is the namespace -big-namespace fills.
const bigNamespace = "bench-big"

// bigNamespace returns namespace bench-big and n objects in it, of the
// namespaced resources recover namespace writes (not events, leases or
// pods, which it skips), in the generator's mix.
func (g *generator) bigNamespace(n int) ([]*object, error) {
	ns, err := g.encodeNamespace(0)
	if err != nil {
		return nil, err
	}
	if ns, err = g.renamed(ns, bigNamespace, ""); err != nil {
		return nil, err
	}
	var ts []*template
	total := 0
	for _, t := range g.templates {
		switch t.res.Plural {
		case "events", "leases", "pods":
			continue
		}
		if t.res.Namespaced {
			ts = append(ts, t)
			total += t.weight
		}
	}
	out := []*object{ns}
	for i := 0; i < n; i++ {
		k := g.rng.IntN(total)
		t := ts[0]
		for _, c := range ts {
			if k < c.weight {
				t = c
				break
			}
			k -= c.weight
		}
		o, err := g.make(t, i, "-big")
		if err != nil {
			return nil, err
		}
		if o, err = g.renamed(o, "", bigNamespace); err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

// renamed returns o with its name (when name is set) or its namespace
// (when ns is set) changed.
func (g *generator) renamed(o *object, name, ns string) (*object, error) {
	dec, err := codec.Decode(o.value)
	if err != nil {
		return nil, err
	}
	acc, err := apimeta.Accessor(dec.Typed)
	if err != nil {
		return nil, err
	}
	if name != "" {
		acc.SetName(name)
		acc.SetLabels(map[string]string{"kubernetes.io/metadata.name": name})
	}
	if ns != "" {
		acc.SetNamespace(ns)
	}
	return g.encode(o.t, dec.Typed, acc.GetNamespace(), acc.GetName())
}

// makeLocked makes deleted object i; the generator's rng is not safe for
// concurrent use.
var genMu sync.Mutex

func (g *generator) makeLocked(i int) (*object, error) {
	genMu.Lock()
	defer genMu.Unlock()
	for _, t := range g.templates {
		if t.res.Plural == "events" {
			return g.make(t, i, "-deleted")
		}
	}
	return g.make(g.templates[0], i, "-deleted")
}

func (g *generator) makeRecreated(i int) (*object, *object, error) {
	genMu.Lock()
	defer genMu.Unlock()
	var cm *template
	for _, t := range g.templates {
		if t.res.Plural == "configmaps" {
			cm = t
		}
	}
	if cm == nil {
		cm = g.templates[0]
	}
	first, err := g.make(cm, i, "-recreated")
	if err != nil {
		return nil, nil, err
	}
	second, err := g.make(cm, i, "-recreated") // same key, new uid and payload
	return first, second, err
}

// startEtcd starts a single-member etcd in dir for writing fast: no fsync,
// an 8 GiB quota, no auto compaction.
func startEtcd(dir string) (*embed.Etcd, *clientv3.Client, error) {
	ports := make([]int, 2)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, nil, err
		}
		ports[i] = l.Addr().(*net.TCPAddr).Port
		l.Close()
	}
	cfg := embed.NewConfig()
	cfg.Name = "bench"
	cfg.Dir = dir
	client := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[0])}
	peer := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[1])}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = "bench=" + peer.String()
	cfg.Logger = "zap"
	cfg.LogLevel = "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.UnsafeNoFsync = true
	cfg.QuotaBackendBytes = 8 << 30
	cfg.EnableGRPCGateway = false
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, nil, errors.New("etcd not ready after 60s")
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{client.String()}, DialTimeout: 10 * time.Second, Logger: zap.NewNop(),
		MaxCallSendMsgSize: 4 << 20})
	if err != nil {
		e.Close()
		return nil, nil, err
	}
	return e, cli, nil
}

// keepWAL copies the member's wal segments from src into dst (through a
// temporary directory renamed into place), as an operator copies them from
// a node after `etcdctl snapshot save`: the log reaches past the
// snapshot's consistent index and starts where etcd last purged it.
func keepWAL(src, dst string) error {
	ents, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	part := dst + ".part"
	_ = os.RemoveAll(part)
	if err := os.MkdirAll(part, 0o755); err != nil {
		return err
	}
	n := 0
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".wal") {
			continue
		}
		if err := copyFile(filepath.Join(src, e.Name()), filepath.Join(part, e.Name())); err != nil {
			return err
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("%s holds no segment", src)
	}
	_ = os.RemoveAll(dst)
	return os.Rename(part, dst)
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
