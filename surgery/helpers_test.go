package surgery

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
	"github.com/etcdpvc/etcdpvc/kubevalue"
	"github.com/etcdpvc/etcdpvc/store"
)

// Corpus keys and files (fixtures/corpus/plain, written by a real
// kube-apiserver v1.37.2).
const (
	pvcKey   = "/registry/persistentvolumeclaims/demo/www-web-0"
	pvcFile  = "persistentvolumeclaims__demo__www-web-0__terminating"
	pvcBound = "persistentvolumeclaims__demo__www-web-1__bound"
	pvKey    = "/registry/persistentvolumes/pv-www-web-0"
	pvFile   = "persistentvolumes__-__pv-www-web-0"
	stsKey   = "/registry/statefulsets/demo/web"
	stsFile  = "statefulsets__demo__web"
	nsKey    = "/registry/namespaces/demo"
	nsFile   = "namespaces__-__demo"
	evKey    = "/registry/events/demo/www-web-0.e2e0001"
	evFile   = "events__demo__www-web-0.e2e0001"
	crKey    = "/registry/e2e.example.com/widgets/demo/w1"
	crFile   = "widgets.e2e.example.com__demo__w1"
	secKey   = "/registry/secrets/demo/web-secret"
	secFile  = "secrets__demo__web-secret"
)

// hangGuard bounds waits that must not hang; it only catches hangs.
const hangGuard = 60 * time.Second

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	t.Cleanup(cancel)
	return ctx
}

// corpus returns the stored bytes of a corpus value.
func corpus(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "fixtures", "corpus", "plain", name+".bin"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// startEtcd starts a single-member etcd and opens the live store on it.
func startEtcd(t testing.TB) (*etcdtest.Cluster, *store.Etcd) {
	t.Helper()
	c := etcdtest.Start(t, etcdtest.Options{})
	return c, openStore(t, c.Endpoints())
}

func openStore(t testing.TB, endpoints []string) *store.Etcd {
	t.Helper()
	s, err := store.OpenEtcd(context.Background(), store.EtcdConfig{Endpoints: endpoints})
	if err != nil {
		t.Fatalf("OpenEtcd: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// create writes key, which must not exist, and returns its revision.
func create(t testing.TB, s store.Writer, key string, value []byte) int64 {
	t.Helper()
	rev, err := s.CompareAndSwap(context.Background(), key, 0, value, 0)
	if err != nil {
		t.Fatalf("create %s: %v", key, err)
	}
	return rev
}

// get reads key, which must exist.
func get(t testing.TB, s store.Reader, key string) *store.KeyValue {
	t.Helper()
	kv, err := s.Get(context.Background(), key, 0)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	return kv
}

// decode decodes a plaintext stored value.
func decode(t testing.TB, value []byte) *codec.Object {
	t.Helper()
	obj, err := codec.Decode(value)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	return obj
}

// current opens stored bytes as if read from key, without etcd, for tests
// of the pure edits.
func current(t testing.TB, key string, value []byte) *kubevalue.Current {
	t.Helper()
	cur, err := Planner{}.Open(context.Background(), store.KeyValue{Key: key, Value: value, ModRevision: 42, CreateRevision: 40, Version: 2})
	if err != nil {
		t.Fatal(err)
	}
	return cur
}

// typedEdit decodes a corpus value, lets fn change the typed object and
// encodes it again as the apiserver would.
func typedEdit[T runtime.Object](t testing.TB, value []byte, fn func(T)) []byte {
	t.Helper()
	obj := decode(t, value)
	typed := obj.Typed.DeepCopyObject().(T)
	fn(typed)
	out, err := codec.EncodeTyped(typed, codec.FormatProtobuf)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// fields splits a protobuf message into (number, whole field, payload).
type wireField struct {
	num     protowire.Number
	data    []byte
	payload []byte
}

func parseFields(t testing.TB, b []byte) []wireField {
	t.Helper()
	var out []wireField
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			t.Fatalf("bad tag: %v", protowire.ParseError(n))
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			t.Fatalf("bad field %d: %v", num, protowire.ParseError(m))
		}
		f := wireField{num: num, data: b[:n+m]}
		if typ == protowire.BytesType {
			f.payload, _ = protowire.ConsumeBytes(b[n:])
		}
		out = append(out, f)
		b = b[n+m:]
	}
	return out
}

// withUnknownSpecField returns a protobuf value whose spec (field 2 of the
// object) carries a field 999 no Kubernetes version knows, as a newer
// apiserver would write it.
func withUnknownSpecField(t testing.TB, stored []byte) []byte {
	t.Helper()
	return withExtraField(t, stored, 2, 999, "from-the-future")
}

// withExtraField returns a protobuf value whose object field objField (a
// message: 2 is spec, 3 is status) carries an extra string field num.
func withExtraField(t testing.TB, stored []byte, objField, num protowire.Number, value string) []byte {
	t.Helper()
	env, err := codec.ParseUnknown(stored)
	if err != nil {
		t.Fatal(err)
	}
	var raw []byte
	for _, f := range parseFields(t, env.Raw) {
		if f.num != objField {
			raw = append(raw, f.data...)
			continue
		}
		msg := append([]byte{}, f.payload...)
		msg = protowire.AppendTag(msg, num, protowire.BytesType)
		msg = protowire.AppendString(msg, value)
		raw = protowire.AppendTag(raw, objField, protowire.BytesType)
		raw = protowire.AppendBytes(raw, msg)
	}
	return env.WithRaw(raw)
}

// asUnknownKind returns stored with its envelope renamed to a kind no
// scheme knows (route.openshift.io/v1 Route); the object bytes stay.
func asUnknownKind(t testing.TB, stored []byte) []byte {
	t.Helper()
	env, err := codec.ParseUnknown(stored)
	if err != nil {
		t.Fatal(err)
	}
	var tm []byte
	tm = protowire.AppendTag(tm, 1, protowire.BytesType)
	tm = protowire.AppendString(tm, "route.openshift.io/v1")
	tm = protowire.AppendTag(tm, 2, protowire.BytesType)
	tm = protowire.AppendString(tm, "Route")
	v := append([]byte{}, codec.ProtobufMagic...)
	v = protowire.AppendTag(v, 1, protowire.BytesType)
	v = protowire.AppendBytes(v, tm)
	v = protowire.AppendTag(v, 2, protowire.BytesType)
	v = protowire.AppendBytes(v, env.Raw)
	for _, n := range []protowire.Number{3, 4} {
		v = protowire.AppendTag(v, n, protowire.BytesType)
		v = protowire.AppendString(v, "")
	}
	return v
}

// outsideMetadata returns everything in a protobuf value except the
// object's metadata field: the envelope's other fields and the object's
// other fields, as stored.
func outsideMetadata(t testing.TB, value []byte) []byte {
	t.Helper()
	env, err := codec.ParseUnknown(value)
	if err != nil {
		t.Fatal(err)
	}
	out := []byte(env.APIVersion + "\x00" + env.Kind + "\x00")
	for _, f := range parseFields(t, env.Raw) {
		if f.num != 1 {
			out = append(out, f.data...)
		}
	}
	return out
}

// backups lists the backup files in dir.
func backups(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".json") {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}

// memberValue reads key from member i alone with a serializable read,
// waiting until the member has applied revision atLeast.
func memberValue(t testing.TB, c *etcdtest.Cluster, i int, key string, atLeast int64) (*store.KeyValue, int64) {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{c.ClientURL(i)}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	deadline := time.Now().Add(hangGuard)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := cli.Get(ctx, key, clientv3.WithSerializable())
		cancel()
		if err == nil && resp.Header.Revision >= atLeast {
			if len(resp.Kvs) == 0 {
				return nil, resp.Header.Revision
			}
			kv := resp.Kvs[0]
			return &store.KeyValue{Key: string(kv.Key), Value: kv.Value, ModRevision: kv.ModRevision,
				CreateRevision: kv.CreateRevision, Version: kv.Version, Lease: kv.Lease}, resp.Header.Revision
		}
		if time.Now().After(deadline) {
			t.Fatalf("member %d: no answer at revision %d: %v", i, atLeast, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// clientPrefix makes a clientv3 delete or get cover a whole prefix.
func clientPrefix() []clientv3.OpOption { return []clientv3.OpOption{clientv3.WithPrefix()} }
