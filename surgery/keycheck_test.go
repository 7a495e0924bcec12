package surgery

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etcdpvc/etcdpvc/kubevalue"
	"github.com/etcdpvc/etcdpvc/store"
)

// TestCheckKeyCorpus checks every value kube-apiserver stored in the
// corpus snapshot against its key: none is a mismatch.
func TestCheckKeyCorpus(t *testing.T) {
	ctx := testCtx(t)
	db, err := store.OpenBolt(filepath.Join("..", "fixtures", "corpus", "etcd-snapshot.db"), store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	checked := 0
	_, err = db.List(ctx, "/registry/", store.ListOptions{}, func(kv *store.KeyValue) error {
		cur, err := Planner{}.Open(ctx, *kv)
		if err != nil {
			return nil // encrypted or not an object: nothing to compare
		}
		if err := (Planner{}).checkKey(kv.Key, cur.Obj); err != nil {
			t.Errorf("%v", err)
		}
		checked++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("checked only %d values", checked)
	}
	t.Logf("%d values match their keys", checked)
}

// TestCheckKey names both objects when a value is not the one its key
// names.
func TestCheckKey(t *testing.T) {
	pvc := decode(t, corpus(t, pvcFile)) // persistentvolumeclaim www-web-0 in demo
	cr := decode(t, corpus(t, crFile))
	for _, tc := range []struct {
		key, prefix string
		obj         any
		want        string
	}{
		{key: pvcKey},
		{key: "/registry/secrets/demo/ghost", want: "holds persistentvolumeclaim www-web-0 in namespace demo, but the key names secret ghost in namespace demo"},
		{key: "/registry/persistentvolumeclaims/other/www-web-0", want: "the key names persistentvolumeclaim www-web-0 in namespace other"},
		{key: "/registry/persistentvolumeclaims/demo/www-web-1", want: "the key names persistentvolumeclaim www-web-1 in namespace demo"},
		{key: "/registry/persistentvolumes/www-web-0", want: "the key names persistentvolume www-web-0"},
		{key: "/custom/persistentvolumeclaims/demo/www-web-0", prefix: "/custom"},
		{key: "/custom/secrets/demo/www-web-0", prefix: "/custom", want: "the key names secret www-web-0 in namespace demo"},
		// Not a key of any resource under the prefix: nothing to compare.
		{key: "/elsewhere/x"},
		{key: crKey, obj: cr},
		{key: "/registry/e2e.example.com/widgets/demo/w2", obj: cr, want: "the key names widgets.e2e.example.com w2 in namespace demo"},
	} {
		obj := pvc
		if tc.obj != nil {
			obj = cr
		}
		err := Planner{Codec: kubevalue.Codec{Prefix: tc.prefix}}.checkKey(tc.key, obj)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.key, err)
		case tc.want != "" && (!errors.Is(err, ErrKeyMismatch) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", tc.key, err, tc.want)
		}
	}
}
