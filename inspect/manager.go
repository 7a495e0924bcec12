package inspect

import "time"

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
	Manager     string `json:"manager"`
	Operation   string `json:"operation"`
	Subresource string `json:"subresource"`
	Time        string `json:"time"`
}

// changeWriter names the manager whose managedFields entry is new or
// has a new time from prev to cur (prev nil: a creation, every entry is
// new); of several, the one with the newest time. The apiserver sets an
// entry's time only for the manager of the request, and only when the
// request changed a field it then owns, so that entry is the writer's. An
// entry whose fields changed but not its time is no evidence: another
// manager's write takes fields from it, and a manager's second change
// within the same second leaves its time as it was. It returns nil when no
// entry says who wrote (a write the apiserver did not track, such as one
// straight to etcd; a removal of fields; a second write in one second), or
// when two entries have the newest time.
func changeWriter(prev, cur map[string]any) *FieldManager {
	before := managedEntries(prev)
	var best *managedEntry
	var bestTime time.Time
	tie := false
	for _, e := range managedEntries(cur) {
		if old, ok := before[entryID(e)]; ok && old.Time == e.Time {
			continue
		}
		t, err := time.Parse(time.RFC3339, e.Time)
		if err != nil {
			continue
		}
		switch {
		case best == nil || t.After(bestTime):
			e := e
			best, bestTime, tie = &e, t, false
		case t.Equal(bestTime):
			tie = true
		}
	}
	if best == nil || tie {
		return nil
	}
	t := bestTime.UTC()
	return &FieldManager{Manager: best.Manager, Operation: best.Operation, Subresource: best.Subresource, Time: &t}
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
		out[entryID(e)] = e
	}
	return out
}
