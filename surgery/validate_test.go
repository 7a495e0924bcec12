package surgery

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/kubevalue"
)

// planPure is MakePlan's check of a new value without etcd: apply the
// edit, decode the result, validate the metadata it changed. changed says
// whether the edit changed anything.
func planPure(t *testing.T, key string, value []byte, e Edit) (changed bool, warning string, err error) {
	t.Helper()
	cur := current(t, key, value)
	out, err := e.Transform(cur)
	if err != nil {
		return false, "", err
	}
	if bytes.Equal(out, cur.Plain) {
		return false, "", nil
	}
	after, err := verifyNew(key, cur.Obj, out)
	if err != nil {
		return true, "", err
	}
	warning, err = checkMeta(cur.Obj, after)
	return true, warning, err
}

func owners(refs ...metav1.OwnerReference) func(*corev1.PersistentVolumeClaim) {
	return func(o *corev1.PersistentVolumeClaim) { o.OwnerReferences = refs }
}

// TestMetaValidation checks that every kind of edit is refused when it
// leaves metadata the apiserver's validation rejects, with the apiserver's
// message, and that an object already invalid can still be repaired.
func TestMetaValidation(t *testing.T) {
	pvc := corpus(t, pvcBound)
	cr := corpus(t, crFile)
	good := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: "6f1c1d0e-0000-4000-8000-000000000001"}
	noUID := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "c"}
	withOwners := typedEdit(t, pvc, owners(good, noUID))
	badLabel := mustEditMeta(t, pvc, codec.MetaEdit{SetLabels: map[string]string{"bad key": "x"}})

	tests := []struct {
		name    string
		key     string
		value   []byte
		edit    Edit
		wantErr error
		// errText and warnText must appear in the error and the warning.
		errText, warnText string
	}{
		{name: "add empty finalizer", key: pvcKey, value: pvc,
			edit:    Meta{MetaEdit: codec.MetaEdit{AddFinalizers: []string{""}}},
			wantErr: ErrInvalid, errText: `persistentvolumeclaim www-web-1 in namespace demo is invalid: [metadata.finalizers: Invalid value: "": name part must be non-empty, `},
		{name: "add finalizer with a space", key: pvcKey, value: pvc,
			edit:    Meta{MetaEdit: codec.MetaEdit{AddFinalizers: []string{"a b"}}},
			wantErr: ErrInvalid, errText: `metadata.finalizers: Invalid value: "a b": name part must consist of alphanumeric characters`},
		{name: "add finalizer with two slashes", key: crKey, value: cr,
			edit:    Meta{MetaEdit: codec.MetaEdit{AddFinalizers: []string{"x/y/z"}}},
			wantErr: ErrInvalid, errText: `widget w1 in namespace demo is invalid: metadata.finalizers: Invalid value: "x/y/z": a valid label key must consist of`},
		{name: "add orphan and foregroundDeletion", key: pvcKey, value: pvc,
			edit:    Meta{MetaEdit: codec.MetaEdit{AddFinalizers: []string{"orphan", "foregroundDeletion"}}},
			wantErr: ErrInvalid, errText: "finalizer orphan and foregroundDeletion cannot be both set"},
		{name: "add valid finalizer", key: pvcKey, value: pvc,
			edit: Meta{MetaEdit: codec.MetaEdit{AddFinalizers: []string{"example.com/hold"}}}},
		{name: "patch owner reference without uid", key: pvcKey, value: pvc,
			edit:    Patch{PatchMerge, []byte(`{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"c","uid":""}]}}`)},
			wantErr: ErrInvalid, errText: "metadata.ownerReferences[0].uid: Required value: must not be empty"},
		{name: "patch two controllers", key: pvcKey, value: pvc,
			edit: Patch{PatchJSON, []byte(`[{"op":"add","path":"/metadata/ownerReferences","value":[
				{"apiVersion":"v1","kind":"ConfigMap","name":"a","uid":"1","controller":true},
				{"apiVersion":"v1","kind":"ConfigMap","name":"b","uid":"2","controller":true}]}]`)},
			wantErr: ErrInvalid, errText: "Only one reference can have Controller set to true"},
		{name: "patch label key with a space", key: pvcKey, value: pvc,
			edit:    Patch{PatchMerge, []byte(`{"metadata":{"labels":{"a b":"x"}}}`)},
			wantErr: ErrInvalid, errText: `metadata.labels: Invalid value: "a b"`},
		{name: "patch label value too long on a custom resource", key: crKey, value: cr,
			edit:    Patch{PatchMerge, []byte(`{"metadata":{"labels":{"a":"` + strings.Repeat("x", 64) + `"}}}`)},
			wantErr: ErrInvalid, errText: "must be no more than 63 bytes"},
		{name: "edit annotation key", key: pvcKey, value: pvc,
			edit: Replace{Content: func() map[string]any {
				c := codec.CopyContent(decode(t, pvc).Content)
				codec.MetadataOf(c)["annotations"] = map[string]any{"x/y/z": "v"}
				return c
			}()},
			wantErr: ErrInvalid, errText: `metadata.annotations: Invalid value: "x/y/z"`},
		{name: "already invalid label, another label set", key: pvcKey, value: badLabel,
			edit:     Meta{MetaEdit: codec.MetaEdit{SetLabels: map[string]string{"team": "storage"}}},
			warnText: `the metadata of persistentvolumeclaim www-web-1 in namespace demo was already invalid and still is: metadata.labels: Invalid value: "bad key"`},
		{name: "already invalid label removed", key: pvcKey, value: badLabel,
			edit: Meta{MetaEdit: codec.MetaEdit{RemoveLabels: []string{"bad key"}}}},
		{name: "invalid owner kept while an earlier one is removed", key: pvcKey, value: withOwners,
			edit:     Meta{MetaEdit: codec.MetaEdit{RemoveOwnerUIDs: []string{string(good.UID)}}},
			warnText: "metadata.ownerReferences[0].uid: Required value"},
		{name: "invalid owner removed", key: pvcKey, value: withOwners,
			edit: Meta{MetaEdit: codec.MetaEdit{RemoveOwnerUIDs: []string{""}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			changed, warning, err := planPure(t, tc.key, tc.value, tc.edit)
			if !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				if !strings.Contains(err.Error(), tc.errText) {
					t.Errorf("err = %q, want it to contain %q", err, tc.errText)
				}
				if !strings.HasSuffix(err.Error(), "; nothing written") {
					t.Errorf("err = %q, want it to end with \"; nothing written\"", err)
				}
				return
			}
			if !changed {
				t.Fatal("edit changed nothing")
			}
			if tc.warnText == "" && warning != "" {
				t.Errorf("unexpected warning %q", warning)
			}
			if !strings.Contains(warning, tc.warnText) {
				t.Errorf("warning = %q, want it to contain %q", warning, tc.warnText)
			}
		})
	}
}

// TestTypoRules checks kubectl's rules: changing an existing label or
// annotation without Overwrite is an error, removing one that is not there
// and setting the value a key has change nothing; removing a finalizer that
// is not there is an error (a misspelt finalizer).
func TestTypoRules(t *testing.T) {
	pvc := corpus(t, pvcBound)
	terminating := corpus(t, pvcFile)
	ns := corpus(t, nsFile)
	cr := corpus(t, crFile)
	sec := mustEditMeta(t, corpus(t, secFile), codec.MetaEdit{SetAnnotations: map[string]string{"note": "s3cr3t-in-annotation"}})

	tests := []struct {
		name    string
		key     string
		value   []byte
		edit    Edit
		changed bool
		// errText is the whole error; "" means no error.
		errText string
		// notInErr must not appear in the error.
		notInErr string
	}{
		{name: "remove two absent finalizers", key: pvcKey, value: pvc,
			edit:    Meta{MetaEdit: codec.MetaEdit{RemoveFinalizers: []string{"a", "b", "a"}}},
			errText: `persistentvolumeclaim www-web-1 in namespace demo: finalizers "a", "b" not found (it has kubernetes.io/pvc-protection); nothing written`},
		{name: "remove absent finalizer", key: pvcKey, value: pvc,
			edit:    Meta{MetaEdit: codec.MetaEdit{RemoveFinalizers: []string{"kubernetes.io/pvc-protectoin"}}},
			errText: `persistentvolumeclaim www-web-1 in namespace demo: finalizer "kubernetes.io/pvc-protectoin" not found (it has kubernetes.io/pvc-protection); nothing written`},
		{name: "remove one present and one absent finalizer", key: crKey, value: cr,
			edit:    Meta{MetaEdit: codec.MetaEdit{RemoveFinalizers: []string{"e2e.example.com/cleanup", "nope"}}},
			errText: `widget w1 in namespace demo: finalizer "nope" not found (it has e2e.example.com/cleanup); nothing written`},
		{name: "remove finalizer from an object without any", key: secKey, value: corpus(t, secFile),
			edit:    Meta{MetaEdit: codec.MetaEdit{RemoveFinalizers: []string{"a"}}},
			errText: `secret web-secret in namespace demo: finalizer "a" not found (it has none); nothing written`},
		{name: "remove present finalizer", key: pvcKey, value: pvc, changed: true,
			edit: Meta{MetaEdit: codec.MetaEdit{RemoveFinalizers: []string{"kubernetes.io/pvc-protection"}}}},
		{name: "remove a namespace's spec finalizer", key: nsKey, value: ns, changed: true,
			edit: Meta{MetaEdit: codec.MetaEdit{RemoveFinalizers: []string{"kubernetes"}}}},
		{name: "remove all finalizers of an object without any", key: secKey, value: corpus(t, secFile),
			edit: Meta{MetaEdit: codec.MetaEdit{RemoveAllFinalizers: true}}},
		// As kubectl: a label or annotation not there is said, and the
		// edit changes nothing (see TestMetaNotes).
		{name: "remove absent label", key: pvcKey, value: pvc,
			edit: Meta{MetaEdit: codec.MetaEdit{RemoveLabels: []string{"ap"}}}},
		{name: "remove absent annotation", key: pvcKey, value: pvc,
			edit: Meta{MetaEdit: codec.MetaEdit{RemoveAnnotations: []string{"nope"}}}},
		{name: "change label without overwrite", key: pvcKey, value: pvc,
			edit:    Meta{MetaEdit: codec.MetaEdit{SetLabels: map[string]string{"app": "web", "team": "x"}}},
			errText: `persistentvolumeclaim www-web-1 in namespace demo: 'app' already has a value (nginx), and --overwrite is false; nothing written`},
		{name: "change label with overwrite", key: pvcKey, value: pvc, changed: true,
			edit: Meta{MetaEdit: codec.MetaEdit{SetLabels: map[string]string{"app": "web"}}, Overwrite: true}},
		{name: "set label to its value", key: pvcKey, value: pvc,
			edit: Meta{MetaEdit: codec.MetaEdit{SetLabels: map[string]string{"app": "nginx"}}}},
		{name: "change annotation without overwrite", key: pvcKey, value: pvc,
			edit:    Meta{MetaEdit: codec.MetaEdit{SetAnnotations: map[string]string{"pv.kubernetes.io/bind-completed": "no"}}},
			errText: `persistentvolumeclaim www-web-1 in namespace demo: 'pv.kubernetes.io/bind-completed' already has a value (yes), and --overwrite is false; nothing written`},
		{name: "change a Secret's annotation without overwrite", key: secKey, value: sec,
			edit:     Meta{MetaEdit: codec.MetaEdit{SetAnnotations: map[string]string{"note": "x"}}},
			errText:  `secret web-secret in namespace demo: 'note' already has a value (<redacted>), and --overwrite is false; nothing written`,
			notInErr: "s3cr3t"},
		{name: "undelete an object not Terminating", key: pvcKey, value: pvc,
			edit: Undelete{SayNotTerminating: true}},
		{name: "undelete without SayNotTerminating", key: pvcKey, value: pvc,
			edit: Undelete{}},
		{name: "undelete a Terminating object", key: pvcKey, value: terminating, changed: true,
			edit: Undelete{SayNotTerminating: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			changed, _, err := planPure(t, tc.key, tc.value, tc.edit)
			if tc.errText == "" {
				if err != nil {
					t.Fatal(err)
				}
				if changed != tc.changed {
					t.Errorf("changed = %v, want %v", changed, tc.changed)
				}
				return
			}
			if !errors.Is(err, ErrNotApplicable) {
				t.Fatalf("err = %v, want ErrNotApplicable", err)
			}
			if err.Error() != tc.errText {
				t.Errorf("err = %q\nwant  %q", err, tc.errText)
			}
			if tc.notInErr != "" && strings.Contains(err.Error(), tc.notInErr) {
				t.Errorf("err %q shows %q", err, tc.notInErr)
			}
		})
	}
}

// TestMetaNotes: a label or annotation removed that the object does not
// have is said, as the reason of a no-op or as a warning of an edit that
// changes something else.
func TestMetaNotes(t *testing.T) {
	pvc := current(t, "/registry/persistentvolumeclaims/demo/www-web-1", corpus(t, pvcBound))
	m := Meta{MetaEdit: codec.MetaEdit{RemoveLabels: []string{"ap"}, RemoveAnnotations: []string{"nope"}}}
	want := `label "ap" not found on persistentvolumeclaim www-web-1 in namespace demo; annotation "nope" not found on persistentvolumeclaim www-web-1 in namespace demo`
	if got := m.NoOpReason(pvc); got != want {
		t.Errorf("NoOpReason = %q\nwant %q", got, want)
	}
	m.RemoveLabels = []string{"app", "ap"}
	m.RemoveAnnotations = nil
	if got := m.Notes(pvc); len(got) != 1 || got[0] != `label "ap" not found on persistentvolumeclaim www-web-1 in namespace demo` {
		t.Errorf("Notes = %q", got)
	}
}

// TestUndeleteNoOpReason: undelete of an object that is not Terminating
// changes nothing and, with SayNotTerminating, says why; of a Terminating
// one, it has nothing to say.
func TestUndeleteNoOpReason(t *testing.T) {
	pvc := current(t, "/registry/persistentvolumeclaims/demo/www-web-1", corpus(t, pvcBound))
	terminating := current(t, "/registry/persistentvolumeclaims/demo/www-web-0", corpus(t, pvcFile))
	for _, tc := range []struct {
		name string
		edit Undelete
		cur  *kubevalue.Current
		want string
	}{
		{"not Terminating", Undelete{SayNotTerminating: true}, pvc, "persistentvolumeclaim www-web-1 in namespace demo is not Terminating"},
		{"not Terminating, silently", Undelete{}, pvc, ""},
		{"Terminating", Undelete{SayNotTerminating: true}, terminating, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.edit.NoOpReason(tc.cur); got != tc.want {
				t.Errorf("NoOpReason %q, want %q", got, tc.want)
			}
		})
	}
}
