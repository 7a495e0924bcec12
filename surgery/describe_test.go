package surgery

import (
	"strings"
	"testing"

	"github.com/etcdpvc/etcdpvc/codec"
)

func TestDescribeSecretEdits(t *testing.T) {
	for _, tc := range []struct {
		name   string
		edit   Edit
		secret bool
		want   string
	}{
		{"merge patch", Patch{PatchMerge, []byte(`{"data":{"password":"bmV3","tls.crt":null},"metadata":{"labels":{"a":"b"}}}`)}, true,
			"merge patch of data.password, -data.tls.crt, metadata.labels.a (values not shown: Secret)"},
		{"json patch", Patch{PatchJSON, []byte(`[{"op":"replace","path":"/data/password","value":"bmV3"},{"op":"move","from":"/data/a","path":"/data/b"}]`)}, true,
			"json patch of replace /data/password, move /data/b from /data/a (values not shown: Secret)"},
		{"bad patch", Patch{PatchMerge, []byte(`{"data":`)}, true, "merge patch of a merge patch that does not parse (values not shown: Secret)"},
		{"not a Secret", Patch{PatchMerge, []byte(`{"data":{"password":"bmV3"}}`)}, false, `merge patch {"data":{"password":"bmV3"}}`},
		{"last-applied annotation", Meta{MetaEdit: codec.MetaEdit{SetAnnotations: map[string]string{codec.LastAppliedAnnotation: `{"data":{"password":"bmV3"}}`, "team": "ops"}}}, true,
			"metadata: set annotations kubectl.kubernetes.io/last-applied-configuration, team"},
		{"label", Meta{MetaEdit: codec.MetaEdit{SetLabels: map[string]string{"team": "ops"}}}, true, "metadata: set labels team=ops"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := describe(tc.edit, tc.secret)
			if got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
			if tc.secret && strings.Contains(got, "bmV3") {
				t.Errorf("description holds the value: %q", got)
			}
		})
	}
}

func TestSecretOperation(t *testing.T) {
	for _, tc := range []struct {
		op     string
		secret bool
		want   string
	}{
		{`merge patch {"data":{"password":"bmV3"}}`, true, "a patch, values not shown: Secret"},
		{`json patch [{"op":"add","path":"/data/a","value":"bmV3"}]`, true, "a patch, values not shown: Secret"},
		{"merge patch of data.password (values not shown: Secret)", true, "merge patch of data.password (values not shown: Secret)"},
		{"metadata: set labels team=ops", true, "metadata: set labels team=ops"},
		{`merge patch {"spec":{"storageClassName":"fast"}}`, false, `merge patch {"spec":{"storageClassName":"fast"}}`},
	} {
		if got := secretOperation(tc.op, tc.secret); got != tc.want {
			t.Errorf("secretOperation(%q, %v) = %q, want %q", tc.op, tc.secret, got, tc.want)
		}
	}
}
