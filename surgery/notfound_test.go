package surgery

import (
	"errors"
	"testing"

	"github.com/etcdpvc/etcdpvc/kubevalue"
	"github.com/etcdpvc/etcdpvc/store"
)

// TestNotFound checks that Load's not-found error names the object, the
// namespace searched and the other namespaces holding the name.
func TestNotFound(t *testing.T) {
	_, s := startEtcd(t)
	pvc := corpus(t, "persistentvolumeclaims__demo__www-web-1__bound")
	create(t, s, "/registry/persistentvolumeclaims/demo/www-web-1", pvc)
	create(t, s, "/registry/persistentvolumeclaims/demo-2/www-web-1", pvc)
	create(t, s, "/registry/persistentvolumeclaims/demo/other", pvc)
	ctx := testCtx(t)
	for _, tc := range []struct {
		key  string
		rev  int64
		msg  string
		hint string
	}{
		{"/registry/persistentvolumeclaims/default/www-web-1", 0,
			"persistentvolumeclaim www-web-1 not found in namespace default; it exists in: demo, demo-2",
			"name one of those namespaces with -n"},
		{"/registry/persistentvolumeclaims/demo-2/other", 0,
			"persistentvolumeclaim other not found in namespace demo-2; it exists in: demo",
			"name the namespace: -n demo"},
		{"/registry/persistentvolumeclaims/demo/nothere", 0,
			"persistentvolumeclaim nothere not found in namespace demo",
			"`etcdpvc ls persistentvolumeclaims -A` lists the names in every namespace"},
		{"/registry/persistentvolumeclaims/default/www-web-1", 1,
			"persistentvolumeclaim www-web-1 not found in namespace default at revision 1",
			"`etcdpvc history persistentvolumeclaims www-web-1 -n default` lists the revisions held"},
		{"/registry/persistentvolumes/pv-x", 0,
			"persistentvolume pv-x not found",
			"`etcdpvc ls persistentvolumes` lists the names"},
	} {
		t.Run(tc.key, func(t *testing.T) {
			_, err := Planner{}.Load(ctx, s, tc.key, tc.rev)
			var nf *kubevalue.NotFoundError
			if !errors.As(err, &nf) || !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("Load: %v, want a *kubevalue.NotFoundError matching store.ErrNotFound", err)
			}
			if nf.Error() != tc.msg {
				t.Errorf("message\n got %q\nwant %q", nf.Error(), tc.msg)
			}
			if nf.Hint() != tc.hint {
				t.Errorf("hint\n got %q\nwant %q", nf.Hint(), tc.hint)
			}
		})
	}
}
