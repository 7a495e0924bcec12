package inspect

import (
	"encoding/json"
	"reflect"
	"time"
)

// FieldManager is who made a change, as the object's metadata.managedFields
// records it: the apiserver keeps one entry per manager (the client's
// field manager: kubectl, kube-controller-manager, kubelet…), operation
// (Update or Apply) and subresource, and sets the entry's time whenever an
// operation of that manager changes a field it owns. A change is therefore
// the work of the entry that is new or changed since the previous value.
type FieldManager struct {
	Manager     string `json:"manager"`
	Operation   string `json:"operation,omitempty"`
	Subresource string `json:"subresource,omitempty"`
	// Time is the entry's time: when the apiserver applied the change (to
	// the second).
	Time *time.Time `json:"time,omitempty"`
}

// String is the manager, with the subresource it wrote through
// ("kubelet (status)") and the operation when it is an apply.
func (w FieldManager) String() string {
	s := w.Manager
	var extra []string
	if w.Subresource != "" {
		extra = append(extra, w.Subresource)
	}
	if w.Operation == "Apply" {
		extra = append(extra, "apply")
	}
	for i, e := range extra {
		if i == 0 {
			s += " ("
		} else {
			s += ", "
		}
		s += e
	}
	if len(extra) > 0 {
		s += ")"
	}
	return s
}

// managedEntry is one metadata.managedFields entry as stored.
type managedEntry struct {
	Manager     string          `json:"manager"`
	Operation   string          `json:"operation"`
	Subresource string          `json:"subresource"`
	Time        string          `json:"time"`
	Fields      json.RawMessage `json:"fieldsV1"`
}

// changeWriter names the manager whose managedFields entry is new or
// changed from prev to cur (prev nil: a creation, every entry is new); of
// several, the one with the newest time (of entries of the same time, the
// first by manager, operation and subresource). It returns nil when no entry
// changed: a change the apiserver did not track (a write straight to
// etcd, say, or one that left every owned field as it was), or an object
// without managedFields.
func changeWriter(prev, cur map[string]any) *FieldManager {
	before := managedEntries(prev)
	var best *managedEntry
	var bestTime time.Time
	for _, e := range managedEntries(cur) {
		if old, ok := before[entryID(e)]; ok && old.Time == e.Time && reflect.DeepEqual(old.Fields, e.Fields) {
			continue
		}
		t, _ := time.Parse(time.RFC3339, e.Time)
		if best == nil || t.After(bestTime) || t.Equal(bestTime) && entryID(e) < entryID(*best) {
			e := e
			best, bestTime = &e, t
		}
	}
	if best == nil {
		return nil
	}
	w := &FieldManager{Manager: best.Manager, Operation: best.Operation, Subresource: best.Subresource}
	if !bestTime.IsZero() {
		t := bestTime.UTC()
		w.Time = &t
	}
	return w
}

// entryID identifies a managedFields entry: the apiserver keeps one per
// manager, operation and subresource.
func entryID(e managedEntry) string { return e.Manager + "\x00" + e.Operation + "\x00" + e.Subresource }

// managedEntries reads content's metadata.managedFields (nil content or
// none: an empty map).
func managedEntries(content map[string]any) map[string]managedEntry {
	out := map[string]managedEntry{}
	meta, _ := content["metadata"].(map[string]any)
	list, _ := meta["managedFields"].([]any)
	for _, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			continue
		}
		e := managedEntry{}
		e.Manager, _ = m["manager"].(string)
		e.Operation, _ = m["operation"].(string)
		e.Subresource, _ = m["subresource"].(string)
		e.Time, _ = m["time"].(string)
		if f, ok := m["fieldsV1"]; ok {
			e.Fields, _ = json.Marshal(f)
		}
		out[entryID(e)] = e
	}
	return out
}
