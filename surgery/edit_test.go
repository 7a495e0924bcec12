package surgery

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/etcdpvc/etcdpvc/codec"
)

func ptr[T any](v T) *T { return &v }

// TestPatch applies patches to corpus objects without etcd (edits are pure
// functions) and compares the result with what the apiserver's own encoder
// writes for the same change.
func TestPatch(t *testing.T) {
	pvc := corpus(t, pvcFile)
	bound := corpus(t, pvcBound)
	sts := corpus(t, stsFile)
	pv := corpus(t, pvFile)
	future := withUnknownSpecField(t, pvc)
	route := asUnknownKind(t, pvc)
	cr := corpus(t, crFile)

	type pvcT = *corev1.PersistentVolumeClaim
	tests := []struct {
		name  string
		key   string
		value []byte
		edit  Edit
		// want is the expected new value; nil with wantErr nil means no change.
		want    []byte
		wantErr error
		// errText must appear in the error.
		errText string
		check   func(t *testing.T, got []byte)
	}{
		{
			name: "pvc storageClassName merge", key: pvcKey, value: pvc,
			edit: Patch{PatchMerge, []byte(`{"spec":{"storageClassName":"fast"}}`)},
			want: typedEdit(t, pvc, func(o pvcT) { o.Spec.StorageClassName = ptr("fast") }),
		},
		{
			name: "pvc volumeName merge", key: pvcKey, value: pvc,
			edit: Patch{PatchMerge, []byte(`{"spec":{"volumeName":"pv-www-web-0"}}`)},
			want: typedEdit(t, pvc, func(o pvcT) { o.Spec.VolumeName = "pv-www-web-0" }),
		},
		{
			name: "pvc requests storage merge", key: pvcKey, value: bound,
			edit: Patch{PatchMerge, []byte(`{"spec":{"resources":{"requests":{"storage":"10Gi"}}}}`)},
			want: typedEdit(t, bound, func(o pvcT) { o.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("10Gi") }),
		},
		{
			name: "pvc status.allocatedResources merge", key: pvcKey, value: bound,
			edit: Patch{PatchMerge, []byte(`{"status":{"allocatedResources":{"storage":"5Gi"}}}`)},
			want: typedEdit(t, bound, func(o pvcT) {
				o.Status.AllocatedResources = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("5Gi")}
			}),
		},
		{
			name: "sts volumeClaimTemplates json patch", key: stsKey, value: sts,
			edit: Patch{PatchJSON, []byte(`[{"op":"replace","path":"/spec/volumeClaimTemplates/0/spec/resources/requests/storage","value":"20Gi"},
				{"op":"replace","path":"/spec/volumeClaimTemplates/0/spec/storageClassName","value":"fast"}]`)},
			want: typedEdit(t, sts, func(o *appsv1.StatefulSet) {
				tmpl := &o.Spec.VolumeClaimTemplates[0]
				tmpl.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("20Gi")
				tmpl.Spec.StorageClassName = ptr("fast")
			}),
		},
		{
			name: "pv claimRef json patch", key: pvKey, value: pv,
			edit: Patch{PatchJSON, []byte(`[{"op":"remove","path":"/spec/claimRef/uid"},{"op":"test","path":"/spec/claimRef/name","value":"www-web-0"}]`)},
			want: typedEdit(t, pv, func(o *corev1.PersistentVolume) { o.Spec.ClaimRef.UID = "" }),
		},
		{
			name: "pv claimRef removed", key: pvKey, value: pv,
			edit: Patch{PatchMerge, []byte(`{"spec":{"claimRef":null}}`)},
			want: typedEdit(t, pv, func(o *corev1.PersistentVolume) { o.Spec.ClaimRef = nil }),
		},
		{
			name: "metadata-only patch goes to the wire editor", key: pvcKey, value: pvc,
			edit: Patch{PatchMerge, []byte(`{"metadata":{"labels":{"app":null,"tier":"db"},"finalizers":null,"deletionTimestamp":null,"deletionGracePeriodSeconds":null}}`)},
			want: mustEditMeta(t, pvc, codec.MetaEdit{RemoveLabels: []string{"app"}, SetLabels: map[string]string{"tier": "db"}, RemoveAllFinalizers: true, ClearDeletion: true}),
		},
		{
			name: "last label removed by json patch", key: pvcKey, value: future,
			edit: Patch{PatchJSON, []byte(`[{"op":"remove","path":"/metadata/labels/app"}]`)},
			want: mustEditMeta(t, future, codec.MetaEdit{RemoveLabels: []string{"app"}}),
		},
		{
			name: "finalizers reordered by a typed encode", key: pvKey, value: pv,
			edit: Patch{PatchMerge, []byte(`{"metadata":{"finalizers":["example.com/a","kubernetes.io/pv-protection"]}}`)},
			want: typedEdit(t, pv, func(o *corev1.PersistentVolume) {
				o.Finalizers = []string{"example.com/a", "kubernetes.io/pv-protection"}
			}),
		},
		{
			name: "unknown field: spec patch refused", key: pvcKey, value: future,
			edit:    Patch{PatchMerge, []byte(`{"spec":{"storageClassName":"fast"}}`)},
			wantErr: codec.ErrLossy, errText: "this build's k8s.io/api does not know every field of this object; a typed re-encode would drop them; use metadata commands (undelete/finalizers/label/annotate), which edit at the wire level",
		},
		{
			name: "unknown field: metadata patch at the wire level", key: pvcKey, value: future,
			edit: Patch{PatchMerge, []byte(`{"metadata":{"annotations":{"etcdpvc.io/note":"kept"},"labels":{"app":"db"}}}`)},
			want: mustEditMeta(t, future, codec.MetaEdit{SetAnnotations: map[string]string{"etcdpvc.io/note": "kept"}, SetLabels: map[string]string{"app": "db"}}),
			check: func(t *testing.T, got []byte) {
				if !bytes.Equal(outsideMetadata(t, got), outsideMetadata(t, future)) || !bytes.Contains(got, []byte("from-the-future")) {
					t.Error("bytes outside metadata changed")
				}
			},
		},
		{
			name: "unknown field: reordering finalizers refused", key: pvcKey, value: future,
			edit:    Patch{PatchMerge, []byte(`{"metadata":{"finalizers":["a.example.com/x","kubernetes.io/pvc-protection"]}}`)},
			wantErr: codec.ErrLossy,
		},
		{
			name: "unknown kind: spec refused", key: "/registry/route.openshift.io/routes/demo/www-web-0", value: route,
			edit:    Patch{PatchMerge, []byte(`{"spec":{"host":"x"}}`)},
			wantErr: codec.ErrUnsupported, errText: "not in this build's scheme",
		},
		{
			name: "unknown kind: annotation at the wire level", key: "/registry/route.openshift.io/routes/demo/www-web-0", value: route,
			edit: Patch{PatchMerge, []byte(`{"metadata":{"annotations":{"a":"b"}}}`)},
			want: mustEditMeta(t, route, codec.MetaEdit{SetAnnotations: map[string]string{"a": "b"}}),
		},
		{
			name: "custom resource: minimal JSON rewrite", key: crKey, value: cr,
			edit: Patch{PatchMerge, []byte(`{"spec":{"size":"XL"}}`)},
			check: func(t *testing.T, got []byte) {
				obj := decode(t, got)
				if obj.Content["spec"].(map[string]any)["size"] != "XL" {
					t.Errorf("spec = %v", obj.Content["spec"])
				}
				i := bytes.Index(cr, []byte(`"spec":`))
				if i < 0 || !bytes.Equal(cr[:i], got[:i]) {
					t.Errorf("bytes before spec changed:\n%s\n%s", cr, got)
				}
			},
		},
		{
			name: "resourceVersion ignored", key: pvcKey, value: pvc,
			edit: Patch{PatchMerge, []byte(`{"metadata":{"resourceVersion":"1"}}`)},
		},
		{
			name: "name refused", key: pvcKey, value: pvc,
			edit:    Patch{PatchMerge, []byte(`{"metadata":{"name":"other"}}`)},
			wantErr: ErrImmutableField, errText: `metadata.name: field cannot be changed by an edit: changing it from "www-web-0" to "other"`,
		},
		{
			name: "namespace refused", key: pvcKey, value: pvc,
			edit:    Patch{PatchJSON, []byte(`[{"op":"replace","path":"/metadata/namespace","value":"prod"}]`)},
			wantErr: ErrImmutableField, errText: "metadata.namespace",
		},
		{
			name: "uid refused", key: pvcKey, value: pvc,
			edit:    Patch{PatchJSON, []byte(`[{"op":"remove","path":"/metadata/uid"}]`)},
			wantErr: ErrImmutableField, errText: "metadata.uid",
		},
		{
			name: "kind refused", key: pvcKey, value: pvc,
			edit:    Patch{PatchMerge, []byte(`{"kind":"PersistentVolume"}`)},
			wantErr: ErrImmutableField, errText: "kind",
		},
		{
			name: "apiVersion refused", key: stsKey, value: sts,
			edit:    Patch{PatchMerge, []byte(`{"apiVersion":"apps/v1beta2"}`)},
			wantErr: ErrImmutableField, errText: "apiVersion",
		},
		{
			name: "unknown field in the patch refused", key: pvcKey, value: pvc,
			edit: Patch{PatchMerge, []byte(`{"spec":{"storageClassNmae":"fast"}}`)}, errText: "storageClassNmae",
		},
		{
			name: "bad patch type", key: pvcKey, value: pvc,
			edit: Patch{"strategic", []byte(`{}`)}, errText: `patch type "strategic"`,
		},
		{
			name: "label value checked", key: pvcKey, value: pvc,
			edit: Patch{PatchMerge, []byte(`{"metadata":{"labels":{"app":1}}}`)}, errText: "not a string",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cur := current(t, tc.key, tc.value)
			got, err := tc.edit.Transform(cur)
			if tc.wantErr != nil || tc.errText != "" {
				if err == nil {
					t.Fatalf("no error; result decodes to %v", decode(t, got).Content)
				}
				if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
					t.Errorf("error %v, want %v", err, tc.wantErr)
				}
				if !strings.Contains(err.Error(), tc.errText) {
					t.Errorf("error %q lacks %q", err, tc.errText)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := verifyNew(tc.key, cur.Obj, got); err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.want != nil:
				if !bytes.Equal(got, tc.want) {
					t.Errorf("value differs from the expected encoding (-want +got):\n%s", cmp.Diff(decode(t, tc.want).Content, decode(t, got).Content))
				}
			case tc.check == nil && !bytes.Equal(got, tc.value):
				t.Errorf("changed (-before +after):\n%s", cmp.Diff(cur.Obj.Content, decode(t, got).Content))
			}
			if tc.check != nil {
				tc.check(t, got)
			}
		})
	}
}

func mustEditMeta(t testing.TB, value []byte, e codec.MetaEdit) []byte {
	t.Helper()
	out, err := codec.EditMeta(value, e)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPatchThroughEtcd makes the two patches operators need most through
// the whole write path and decodes what was written.
func TestPatchThroughEtcd(t *testing.T) {
	ctx := testCtx(t)
	_, s := startEtcd(t)
	boundKey := "/registry/persistentvolumeclaims/demo/www-web-1"
	create(t, s, boundKey, corpus(t, pvcBound))
	create(t, s, stsKey, corpus(t, stsFile))
	for _, tc := range []struct {
		name  string
		key   string
		patch Patch
		check func(t *testing.T, obj *codec.Object)
	}{
		{"pvc storageClassName", boundKey, Patch{PatchMerge, []byte(`{"spec":{"storageClassName":"fast-ssd"}}`)}, func(t *testing.T, obj *codec.Object) {
			if got := obj.Typed.(*corev1.PersistentVolumeClaim).Spec.StorageClassName; got == nil || *got != "fast-ssd" {
				t.Errorf("storageClassName = %v", got)
			}
		}},
		{"sts volumeClaimTemplates", stsKey, Patch{PatchJSON, []byte(`[{"op":"replace","path":"/spec/volumeClaimTemplates/0/spec/resources/requests/storage","value":"50Gi"}]`)}, func(t *testing.T, obj *codec.Object) {
			q := obj.Typed.(*appsv1.StatefulSet).Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage]
			if q.String() != "50Gi" {
				t.Errorf("storage = %s", q.String())
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Planner{}.MakePlan(ctx, s, tc.key, tc.patch)
			if err != nil {
				t.Fatal(err)
			}
			if p.NoOp || p.Diff == "" {
				t.Fatalf("plan: %+v", p)
			}
			t.Logf("diff:\n%s", p.Diff)
			if _, err := Apply(ctx, s, p, ApplyOptions{BackupDir: t.TempDir()}); err != nil {
				t.Fatal(err)
			}
			obj := decode(t, get(t, s, tc.key).Value)
			tc.check(t, obj)
			if err := obj.RoundTrips(); err != nil {
				t.Errorf("written value is not what the apiserver would write: %v", err)
			}
		})
	}
}

func TestParseLabelArgs(t *testing.T) {
	tests := []struct {
		args    []string
		set     map[string]string
		remove  []string
		errText string
	}{
		{args: []string{"app=web", "tier-"}, set: map[string]string{"app": "web"}, remove: []string{"tier"}},
		{args: []string{"example.com/owner=team-a", "empty="}, set: map[string]string{"example.com/owner": "team-a", "empty": ""}},
		{args: []string{"a=b=c"}, errText: "cannot contain '='"},
		{args: []string{"app=has space"}, errText: "invalid label value"},
		{args: []string{"-bad=x"}, errText: "invalid label key"},
		{args: []string{"app"}, errText: "unknown label spec"},
		{args: []string{"app=x", "app-"}, errText: "cannot both set and remove"},
		{args: nil, errText: "at least one"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			set, remove, err := ParseLabelArgs(tc.args)
			if tc.errText != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errText) {
					t.Fatalf("error %v, want %q", err, tc.errText)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.set, set); diff != "" {
				t.Errorf("set (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.remove, remove); diff != "" {
				t.Errorf("remove (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseAnnotationArgs(t *testing.T) {
	tests := []struct {
		args    []string
		set     map[string]string
		remove  []string
		errText string
	}{
		{args: []string{"note=a=b c", "old-"}, set: map[string]string{"note": "a=b c"}, remove: []string{"old"}},
		{args: []string{"Example.COM/Note={\"json\": true}"}, set: map[string]string{"Example.COM/Note": `{"json": true}`}},
		{args: []string{"bad key=x"}, errText: "invalid annotation key"},
		{args: []string{"note"}, errText: "invalid annotation format"},
		{args: []string{"n=1", "n-"}, errText: "cannot both set and remove"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			set, remove, err := ParseAnnotationArgs(tc.args)
			if tc.errText != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errText) {
					t.Fatalf("error %v, want %q", err, tc.errText)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.set, set); diff != "" {
				t.Errorf("set (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.remove, remove); diff != "" {
				t.Errorf("remove (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEditor round-trips the $EDITOR document: unchanged is no change,
// comments are ignored, an empty file abandons the edit, managedFields stay.
func TestEditor(t *testing.T) {
	pvc := corpus(t, pvcBound)
	cur := current(t, pvcKey, pvc)
	doc, err := EditableYAML(cur)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(doc, []byte("# Please edit the object below.")) || !bytes.Contains(doc, []byte(`resourceVersion: "42"`)) {
		t.Fatalf("document:\n%s", doc)
	}
	if bytes.Contains(doc, []byte("managedFields:")) {
		t.Error("managedFields shown")
	}
	tests := []struct {
		name    string
		edit    func([]byte) []byte
		wantErr error
		check   func(t *testing.T, obj *codec.Object)
	}{
		{"unchanged", func(b []byte) []byte { return b }, nil, nil},
		{"comments added", func(b []byte) []byte { return append([]byte("# mine\n"), b...) }, nil, nil},
		{"storageClassName", func(b []byte) []byte {
			return bytes.Replace(b, []byte("storageClassName: local-disks"), []byte("storageClassName: fast # new"), 1)
		}, nil, func(t *testing.T, obj *codec.Object) {
			pvc := obj.Typed.(*corev1.PersistentVolumeClaim)
			if *pvc.Spec.StorageClassName != "fast" || len(pvc.ManagedFields) == 0 {
				t.Errorf("storageClassName %q, %d managedFields", *pvc.Spec.StorageClassName, len(pvc.ManagedFields))
			}
		}},
		{"empty", func([]byte) []byte { return []byte("# nothing\n\n") }, ErrEmptyEdit, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			content, err := ParseEdited(tc.edit(doc))
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("error %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := Replace{Content: content}.Transform(cur)
			if err != nil {
				t.Fatal(err)
			}
			if tc.check == nil {
				if !bytes.Equal(got, pvc) {
					t.Fatalf("changed (-before +after):\n%s", cmp.Diff(cur.Obj.Content, decode(t, got).Content))
				}
				return
			}
			tc.check(t, decode(t, got))
		})
	}
}

func TestDescribe(t *testing.T) {
	for _, tc := range []struct {
		edit Edit
		want string
	}{
		{Undelete{}, "undelete: clear deletionTimestamp and deletionGracePeriodSeconds, remove finalizers foregroundDeletion and orphan"},
		{Meta{MetaEdit: codec.MetaEdit{RemoveFinalizers: []string{"kubernetes.io/pvc-protection"}}}, "metadata: remove finalizers kubernetes.io/pvc-protection"},
		{Meta{MetaEdit: codec.MetaEdit{SetLabels: map[string]string{"b": "2", "a": "1"}, RemoveLabels: []string{"c"}}}, "metadata: set labels a=1, b=2; remove labels c"},
		{Patch{PatchMerge, []byte("{\n  \"spec\": {}\n}")}, `merge patch {"spec":{}}`},
	} {
		if got := tc.edit.Describe(); got != tc.want {
			t.Errorf("Describe() = %q, want %q", got, tc.want)
		}
	}
}

// TestPatchCheck: a patch that is not one of its type is refused before
// any object is read, saying where and naming the type it was given as.
func TestPatchCheck(t *testing.T) {
	for _, tc := range []struct {
		name  string
		patch Patch
		want  string // "": valid
	}{
		{"merge", Patch{PatchMerge, []byte(`{"spec":{"a":1}}`)}, ""},
		{"json", Patch{PatchJSON, []byte(`[{"op":"remove","path":"/a"}]`)}, ""},
		{"merge cut short", Patch{PatchMerge, []byte(`{"spec":`)}, "the merge patch is not valid JSON: at line 1, column 9 (byte 8): unexpected end of JSON input"},
		{"merge cut short at a new line", Patch{PatchMerge, []byte("{\n\"spec\":\n")}, "the merge patch is not valid JSON: at line 3, column 1 (byte 10): unexpected end of JSON input"},
		{"merge bad character", Patch{PatchMerge, []byte("{\n \"a\": 1 2}")}, "the merge patch is not valid JSON: at line 2, column 9 (byte 11): invalid character '2' after object key:value pair"},
		{"merge not an object", Patch{PatchMerge, []byte(`"x"`)}, `the merge patch is a string, not a JSON object ({"field": value, ...})`},
		{"json bad", Patch{PatchJSON, []byte(`[{"op":`)}, "the JSON patch is not valid JSON: at line 1, column 8 (byte 7): unexpected end of JSON input"},
		{"json not an array", Patch{PatchJSON, []byte(`null`)}, `the JSON patch is null, not an array of operations ([{"op": ..., "path": ...}, ...]; --type merge takes a merge patch)`},
		{"json not operations", Patch{PatchJSON, []byte(`[1]`)}, "the JSON patch is not an array of operations: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.patch.Check()
			switch {
			case tc.want == "" && err != nil:
				t.Fatal(err)
			case tc.want == "":
			case err == nil || !errors.Is(err, ErrBadPatch) || !strings.HasPrefix(err.Error(), tc.want):
				t.Fatalf("error %v, want one matching ErrBadPatch that starts %q", err, tc.want)
			case tc.patch.Type == PatchMerge && strings.Contains(err.Error(), "JSON patch"):
				t.Errorf("a merge patch called a JSON patch: %v", err)
			}
		})
	}
}
