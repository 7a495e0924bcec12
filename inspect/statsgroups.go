package inspect

import (
	"fmt"
	"strings"
)

// StatsSchemaVersion is the version of `stats -o json`'s schema
// (docs/stats-schema.md): raised when a field changes meaning or goes;
// new fields do not raise it.
const StatsSchemaVersion = 2

// Counts are what stats counts of a group of keys: the current objects
// and their bytes, and with a source that holds every revision (a db
// file) the history. The history fields are nil when unknown (live etcd,
// a write-ahead log).
type Counts struct {
	Objects    int64  `json:"objects"`
	Bytes      int64  `json:"bytes"`
	Leased     int64  `json:"leased"`
	Revisions  *int64 `json:"revisions,omitempty"`
	Tombstones *int64 `json:"tombstones,omitempty"`
	Deleted    *int64 `json:"deletedKeys,omitempty"`
	// HistoryBytes is the size of every value held, all revisions.
	HistoryBytes *int64 `json:"historyBytes,omitempty"`
}

// withHistory sets the history counts to zero: known.
func (c *Counts) withHistory() {
	c.Revisions, c.Tombstones, c.Deleted, c.HistoryBytes = new(int64), new(int64), new(int64), new(int64)
}

// GroupBy is what stats groups its counts by (--by): the resource, the
// namespace, or both.
type GroupBy struct {
	Resource, Namespace bool
}

// GroupByWords are the words --by takes, comma-separated.
var GroupByWords = []string{"resource", "namespace"}

// ParseGroupBy reads --by: "resource", "namespace", or both
// comma-separated ("resource,namespace"). An unknown word is an error
// naming the words known.
func ParseGroupBy(s string) (GroupBy, error) {
	var g GroupBy
	for _, w := range strings.Split(s, ",") {
		switch strings.TrimSpace(w) {
		case "resource", "resources":
			g.Resource = true
		case "namespace", "namespaces", "ns":
			g.Namespace = true
		default:
			return GroupBy{}, fmt.Errorf("--by %q: %q is not one of %s (comma-separated)", s, w, strings.Join(GroupByWords, ", "))
		}
	}
	return g, nil
}

// Words are g as --by spells it.
func (g GroupBy) Words() []string {
	var out []string
	if g.Resource || !g.Namespace {
		out = append(out, "resource")
	}
	if g.Namespace {
		out = append(out, "namespace")
	}
	return out
}

// groupKey names one group of --by.
type groupKey struct{ resource, namespace string }

// GroupStats counts one group of --by: a resource, a namespace, or a
// resource in a namespace. Resource and Namespace are set when the group
// is by them; Namespace "" is the keys of no namespace (cluster-scoped
// objects, and keys that name no object).
type GroupStats struct {
	Resource  *string `json:"resource,omitempty"`
	Namespace *string `json:"namespace,omitempty"`
	Counts
}

// NoNamespace is how the text tables name the group of keys in no
// namespace.
const NoNamespace = "(no namespace)"
