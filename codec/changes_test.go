package codec

import "testing"

func TestChanges(t *testing.T) {
	pending, err := Decode(readFile(t, "../fixtures/corpus/plain/persistentvolumeclaims__demo__www-web-0__pending.bin"))
	if err != nil {
		t.Fatal(err)
	}
	term, err := Decode(readFile(t, "../fixtures/corpus/plain/persistentvolumeclaims__demo__www-web-0__terminating.bin"))
	if err != nil {
		t.Fatal(err)
	}
	got := SummarizeChanges(Changes(pending.Content, term.Content, false), 4)
	if want := "+deletionGracePeriodSeconds, +deletionTimestamp, +status.phase"; got != want {
		t.Errorf("pending→terminating = %q, want %q", got, want)
	}
	a := map[string]any{"spec": map[string]any{"resources": map[string]any{"requests": map[string]any{"storage": "10Gi"}}}}
	b := map[string]any{"spec": map[string]any{"resources": map[string]any{"requests": map[string]any{"storage": "1000Gi"}}}}
	if got, want := SummarizeChanges(Changes(a, b, false), 4), "spec.resources.requests.storage 10Gi→1000Gi"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := SummarizeChanges(nil, 4); got != "no change" {
		t.Errorf("got %q", got)
	}
}
