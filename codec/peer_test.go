package codec

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPeer2017 decodes values a 2017 kube-apiserver (about v1.7) wrote and
// compares them with the peer tool's expected output.
func TestPeer2017(t *testing.T) {
	for _, name := range []string{"pod", "job"} {
		t.Run(name, func(t *testing.T) {
			// The peer's files were saved with etcdctl's trailing newline.
			in, err := ReadInput(bytes.NewReader(readFile(t, "../fixtures/peer/auger-2017/storage/"+name+".bin")))
			if err != nil {
				t.Fatal(err)
			}
			stored := in.Value
			obj, err := Decode(stored)
			if err != nil {
				t.Fatal(err)
			}
			var want map[string]any
			if err := json.Unmarshal(readFile(t, "../fixtures/peer/auger-2017/json/"+name+".json"), &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, deepCopy(obj.Content)); diff != "" {
				t.Errorf("(-peer +decoded):\n%s", diff)
			}
			// A typed re-encode of a 2017 value is not byte-exact: it
			// carries selfLink, which is no longer stored, and fields of
			// that era encoded differently. RoundTrips must say so, so
			// that such values are only ever edited at the wire level.
			rtErr := obj.RoundTrips()
			if rtErr != nil && !errors.Is(rtErr, ErrLossy) {
				t.Fatalf("RoundTrips: %v", rtErr)
			}
			t.Logf("typed round trip: %v", rtErr)
			got, err := EditMeta(stored, MetaEdit{SetLabels: map[string]string{"etcdpvc": "test"}})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(outsideMetadata(t, got), outsideMetadata(t, stored)) {
				t.Fatal("bytes outside metadata changed")
			}
			after, err := Decode(got)
			if err != nil {
				t.Fatal(err)
			}
			if after.Meta.Labels["etcdpvc"] != "test" || after.Meta.SelfLink != obj.Meta.SelfLink {
				t.Fatalf("labels %v selfLink %q", after.Meta.Labels, after.Meta.SelfLink)
			}
		})
	}
}
