package flows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strconv"
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

// heldAtConfirm is a terminal that, asked to confirm, measures the heap
// then held (after a collection) and refuses.
type heldAtConfirm struct {
	terminal
	heap uint64
}

func (h *heldAtConfirm) Confirm(q, hint string) error {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	h.heap = ms.HeapAlloc
	return errors.New("measured")
}

// TestDeleteSelectedPlansHoldLittle: the plans of a selection are all held
// until the write (one confirmation, one check of the backups' room): each
// holds its stored value for the backup, not the object decoded three ways
// (typed, as JSON-like content, its metadata with managedFields), which
// took ten times the value. 2000 Events of about 1.1 KiB each are held in
// less than three times their values.
func TestDeleteSelectedPlansHoldLittle(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.Options{})
	ctx := context.Background()
	const n = 2000
	var values int
	for i := range n {
		name := fmt.Sprintf("web-%d.17a2b3c4d5e6f%04d", i, i)
		v := `{"apiVersion":"v1","kind":"Event","metadata":{"name":"` + name + `","namespace":"demo","uid":"0f5c2a7e-5a0b-4c39-9d7c-3f1d2a6b8e00","creationTimestamp":"2020-01-01T00:00:00Z",` +
			`"managedFields":[{"manager":"kubelet","operation":"Update","apiVersion":"v1","time":"2020-01-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:count":{},"f:firstTimestamp":{},"f:involvedObject":{},"f:lastTimestamp":{},"f:message":{},"f:reason":{},"f:source":{"f:component":{},"f:host":{}},"f:type":{}}}]},` +
			`"involvedObject":{"kind":"Pod","namespace":"demo","name":"web-` + strconv.Itoa(i) + `","uid":"7a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d","apiVersion":"v1","fieldPath":"spec.containers{web}"},` +
			`"reason":"BackOff","message":"Back-off restarting failed container web in pod web-` + strconv.Itoa(i) + `_demo(7a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d)","source":{"component":"kubelet","host":"node-1"},` +
			`"firstTimestamp":"2020-01-01T00:00:00Z","lastTimestamp":"2020-01-01T00:00:00Z","count":42,"type":"Warning","reportingComponent":"kubelet","reportingInstance":"node-1"}`
		values += len(v)
		c.Put(t, "/registry/events/demo/"+name, []byte(v))
	}
	s, err := Open(ctx, session.Options{Endpoints: c.Endpoints(), Prefix: "/registry", Verify: verify.Never})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	term := &heldAtConfirm{}
	err = s.DeleteSelected(ctx, term, SelectedRequest{Resource: "events", AllNamespaces: true, OlderThan: time.Hour, Now: time.Now(), PageSize: 500},
		WriteOptions{BackupDir: t.TempDir(), MaxTxnOps: store.MaxTxnOps})
	if err == nil || err.Error() != "measured" || !strings.Contains(term.out, fmt.Sprintf("selected %d of the %d objects", n, n)) {
		t.Fatalf("DeleteSelected: %v\n%s", err, term.out)
	}
	held := int64(term.heap) - int64(ms.HeapAlloc)
	t.Logf("%d plans: %d bytes held, %d per object, for values of %d bytes each", n, held, held/n, values/n)
	if held > 3*int64(values) {
		t.Errorf("the plans of %d Events hold %d bytes, %.1f times their values", n, held, float64(held)/float64(values))
	}
}
