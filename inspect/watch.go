package inspect

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/etcdpvc/etcdpvc/clock"
	"github.com/etcdpvc/etcdpvc/kubevalue"
	"github.com/etcdpvc/etcdpvc/store"
)

// WatchOptions tune Watch.
type WatchOptions struct {
	// Codec decrypts and decodes each value.
	Codec kubevalue.Codec
	// ShowSecrets puts a Secret's changed values in the change labels;
	// by default they are reported by size (see codec.Changes).
	ShowSecrets bool
	// From and Until bound the revisions reported (see store.WatchOptions).
	From, Until int64
	// Started and Note are store.WatchOptions'.
	Started func(revision int64)
	Note    func(msg string)
	// Now is the clock that stamps the changes made while the watch runs.
	Now func() time.Time
	// Labels, if set, keeps the changes of objects whose labels it
	// matches before or after the change (so the change that takes a
	// label away is reported too), and those whose labels could not be
	// read (a value that cannot be decoded is never left out).
	Labels labels.Selector
}

// WatchRow is one change a watch reports.
type WatchRow struct {
	// Type is ADDED (a creation), MODIFIED or DELETED, as a Kubernetes
	// watch says.
	Type      string `json:"type"`
	Revision  int64  `json:"revision"`
	Key       string `json:"key"`
	Resource  string `json:"resource,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	Version   int64  `json:"version,omitempty"`
	Lease     int64  `json:"lease,omitempty"`
	// Change says what changed, as history does.
	Change string `json:"change"`
	// Undecodable is true when the value could not be read (Change says
	// why).
	Undecodable bool `json:"undecodable,omitempty"`
	// Manager made the change, where managedFields tell (see
	// FieldManager); its Time is when the apiserver applied it.
	Manager *FieldManager `json:"manager,omitempty"`
	// Received is when etcdpvc received a change made while it watched
	// (nil for a change etcd replayed from the past).
	Received *time.Time `json:"received,omitempty"`
	// Time, for a change etcd replayed from the past, is when it was
	// made, placed among the revisions etcd holds (clock.Clock; nil where
	// not read).
	Time *clock.Interval `json:"time,omitempty"`
	// object names it as kubectl's -o name does ("" : the key does not
	// parse).
	object string
}

// Watch follows the changes under scope's prefix (key alone with exact)
// through w and calls fn with each, decoded as History decodes a
// revision: what changed since the value before (etcd hands it with each
// change), and the field manager that made it.
func Watch(ctx context.Context, w store.Watcher, prefix string, scope Scope, key string, o WatchOptions, fn func(WatchRow) error) error {
	watchKey, isPrefix := scope.Prefix, true
	if key != "" {
		watchKey, isPrefix = key, false
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	so := store.WatchOptions{Prefix: isPrefix, From: o.From, Until: o.Until, Started: o.Started, Note: o.Note}
	return w.Watch(ctx, watchKey, so, func(ev store.WatchEvent) error {
		r, ns, name, parsed, ok := scope.Match(prefix, ev.KV.Key)
		if key == "" && !ok {
			return nil
		}
		row := WatchRow{Revision: ev.KV.ModRevision, Key: ev.KV.Key, Version: ev.KV.Version, Lease: ev.KV.Lease}
		if parsed {
			row.Resource, row.Namespace, row.Name = r.String(), ns, name
			kind := r.Singular
			if kind == "" {
				kind = r.Plural
			}
			if r.Group != "" {
				kind += "." + r.Group
			}
			row.object = kind + "/" + name
		}
		if ev.Live {
			t := now().UTC()
			row.Received = &t
		}
		var prev map[string]any
		var prevEnc string
		if ev.Prev != nil {
			if p, err := o.Codec.Open(ctx, *ev.Prev); err == nil {
				prev, prevEnc = p.Obj.Content, encLabel(p)
			}
		}
		var curContent map[string]any
		switch {
		case ev.Deleted:
			row.Type, row.Change = "DELETED", "deleted"
			if prev == nil {
				row.Undecodable = ev.Prev != nil
			}
		default:
			row.Type = "MODIFIED"
			if ev.KV.Version == 1 {
				row.Type = "ADDED"
			}
			cur, err := o.Codec.Open(ctx, ev.KV)
			if err != nil {
				row.Change, row.Undecodable = "undecodable: "+err.Error(), true
				break
			}
			curContent = cur.Obj.Content
			switch {
			case ev.KV.Version != 1 && prev == nil && ev.Prev != nil:
				row.Change = "the value before could not be read"
			case ev.KV.Version != 1 && prev == nil:
				row.Change = "the value before is no longer held"
			default:
				row.Change = changeLabel(ev.KV.Version, prev, cur.Obj.Content, prevEnc, encLabel(cur), o.ShowSecrets)
				row.Manager = rowManager(ev.KV.Version, prev, cur.Obj.Content)
			}
		}
		prevUnread := ev.Prev != nil && prev == nil
		if o.Labels != nil && !row.Undecodable && !prevUnread && !(ev.Deleted && ev.Prev == nil) &&
			!labelsMatch(o.Labels, prev) && !labelsMatch(o.Labels, curContent) {
			return nil
		}
		return fn(row)
	})
}

// labelsMatch reports whether content (nil: none) has labels sel matches.
func labelsMatch(sel labels.Selector, content map[string]any) bool {
	if content == nil {
		return false
	}
	meta, _ := content["metadata"].(map[string]any)
	raw, _ := meta["labels"].(map[string]any)
	set := labels.Set{}
	for k, v := range raw {
		s, _ := v.(string)
		set[k] = s
	}
	return sel.Matches(set)
}

// encLabel says how an opened value is stored at rest.
func encLabel(v *kubevalue.Current) string {
	if v.Encrypted != nil {
		return "encrypted with " + v.Encrypted.String()
	}
	return "in the clear"
}

// WatchColumns head the lines of a watch followed as a table.
var WatchColumns = []string{"TIME", "REVISION", "TYPE", "NAMESPACE", "OBJECT", "MANAGER", "CHANGE"}

// WatchTable writes a watch's rows as lines under WatchColumns as they
// come, each written whole at once: the columns are padded to fixed
// widths, not aligned on the rows to come (there is no end to wait for).
type WatchTable struct {
	// Now and Zone are when and where TIME cells of replayed changes are
	// shown (TimeCell; Zone nil: the local zone).
	Now  time.Time
	Zone *time.Location
	w    io.Writer
	// headed: the header line is written (or left out).
	headed bool
}

// NewWatchTable returns a WatchTable writing to w; withHeader false
// leaves the header line out (--no-headers).
func NewWatchTable(w io.Writer, withHeader bool) *WatchTable {
	return &WatchTable{w: w, headed: !withHeader}
}

// watchWidths are the padded widths of the columns but the last.
var watchWidths = []int{21, 10, 9, 16, 40, 26}

// Row writes one row. TIME is when the change was made: its interval
// among the revisions etcd holds, for one replayed from the past; when it
// was received, for one made while the watch runs; else the time its
// manager's entry carries.
func (t *WatchTable) Row(r WatchRow) error {
	if !t.headed {
		t.headed = true
		if _, err := io.WriteString(t.w, watchLine(WatchColumns)); err != nil {
			return err
		}
	}
	when := "-"
	switch {
	case r.Time != nil:
		loc := t.Zone
		if loc == nil {
			loc = time.Local
		}
		when = TimeCell(*r.Time, t.Now, loc)
	case r.Manager != nil && r.Manager.Time != nil:
		when = r.Manager.Time.Format(time.RFC3339)
	case r.Received != nil:
		when = r.Received.Format(time.RFC3339)
	}
	ns, obj := r.Namespace, r.object
	if ns == "" {
		ns = "-"
	}
	if obj == "" {
		obj = r.Key
	}
	manager := "-"
	if r.Manager != nil {
		manager = r.Manager.String()
	}
	_, err := io.WriteString(t.w, watchLine([]string{when, strconv.FormatInt(r.Revision, 10), r.Type, ns, obj, manager, r.Change}))
	return err
}

// watchLine pads cells to watchWidths (a longer cell pushes the rest
// right by one space) and ends the line.
func watchLine(cells []string) string {
	var b strings.Builder
	for i, c := range cells {
		b.WriteString(c)
		if i == len(cells)-1 {
			break
		}
		pad := 1
		if i < len(watchWidths) && len(c) < watchWidths[i] {
			pad = watchWidths[i] - len(c)
		}
		b.WriteString(strings.Repeat(" ", pad))
	}
	b.WriteByte('\n')
	return b.String()
}

// WriteWatchJSON writes row as one line of JSON.
func WriteWatchJSON(w io.Writer, row WatchRow) error {
	if err := json.NewEncoder(w).Encode(row); err != nil {
		return fmt.Errorf("watch row: %w", err)
	}
	return nil
}
