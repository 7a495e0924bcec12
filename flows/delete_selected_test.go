package flows

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
	"github.com/etcdpvc/etcdpvc/session"
	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/verify"
)

func TestObjectTime(t *testing.T) {
	for _, c := range []struct {
		name, object, want string
	}{
		{"event lastTimestamp", `{"kind":"Event","metadata":{"creationTimestamp":"2030-01-01T00:00:00Z"},"lastTimestamp":"2020-01-01T00:00:00Z","eventTime":"2021-01-01T00:00:00.000000Z"}`, "2020-01-01T00:00:00Z"},
		{"event series", `{"kind":"Event","metadata":{"creationTimestamp":"2030-01-01T00:00:00Z"},"lastTimestamp":null,"series":{"count":3,"lastObservedTime":"2022-01-01T00:00:00.123456Z"},"eventTime":"2021-01-01T00:00:00.000000Z"}`, "2022-01-01T00:00:00.123456Z"},
		{"event eventTime", `{"kind":"Event","metadata":{"creationTimestamp":"2030-01-01T00:00:00Z"},"eventTime":"2021-01-01T00:00:00.000000Z"}`, "2021-01-01T00:00:00Z"},
		{"event neither", `{"kind":"Event","metadata":{"creationTimestamp":"2030-01-01T00:00:00Z"},"eventTime":null}`, "2030-01-01T00:00:00Z"},
		{"configmap", `{"kind":"ConfigMap","metadata":{"creationTimestamp":"2030-01-01T00:00:00Z"},"lastTimestamp":"2020-01-01T00:00:00Z"}`, "2030-01-01T00:00:00Z"},
		{"no time", `{"kind":"ConfigMap","metadata":{"name":"x"}}`, ""},
	} {
		var content map[string]any
		if err := json.Unmarshal([]byte(c.object), &content); err != nil {
			t.Fatal(err)
		}
		got := ObjectTime(content)
		if c.want == "" {
			if !got.IsZero() {
				t.Errorf("%s: %v, want the zero time", c.name, got)
			}
			continue
		}
		want, _ := time.Parse(time.RFC3339Nano, c.want)
		if !got.Equal(want) {
			t.Errorf("%s: %v, want %v", c.name, got, want)
		}
	}
}

// changer is a terminal whose confirmation lets another writer change key
// first: between the scan and the write, as a controller would.
type changer struct {
	terminal
	change func()
}

func (c *changer) Confirm(q, hint string) error {
	c.change()
	return c.terminal.Confirm(q, hint)
}

// TestDeleteSelectedConflict: a key changed after the scan read it refuses
// its transaction, all or nothing; every key is still there.
func TestDeleteSelectedConflict(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.Options{})
	ctx := context.Background()
	event := func(name, last string) []byte {
		return []byte(`{"apiVersion":"v1","kind":"Event","metadata":{"name":"` + name + `","namespace":"demo","creationTimestamp":"2020-01-01T00:00:00Z"},"involvedObject":{"kind":"Pod","name":"p"},"reason":"R","lastTimestamp":"` + last + `"}`)
	}
	for _, n := range []string{"a", "b", "c"} {
		c.Put(t, "/registry/events/demo/"+n, event(n, "2020-01-01T00:00:00Z"))
	}
	s, err := Open(ctx, session.Options{Endpoints: c.Endpoints(), Prefix: "/registry", Verify: verify.Never})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	term := &changer{change: func() { c.Put(t, "/registry/events/demo/b", event("b", "2020-01-02T00:00:00Z")) }}
	err = s.DeleteSelected(ctx, term, SelectedRequest{Resource: "events", Namespace: "demo", OlderThan: time.Hour, Now: time.Now(), PageSize: 500},
		WriteOptions{BackupDir: t.TempDir(), MaxTxnOps: store.MaxTxnOps})
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("DeleteSelected: %v; want a conflict", err)
	}
	if !term.asked || !strings.Contains(term.out, "selected 3 of the 3 objects") {
		t.Errorf("asked %v, told %q", term.asked, term.out)
	}
	for _, n := range []string{"a", "b", "c"} {
		if _, err := s.Reader.Get(ctx, "/registry/events/demo/"+n, 0); err != nil {
			t.Errorf("event %s after the refused write: %v", n, err)
		}
	}
}
