package inspect

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/etcdpvc/etcdpvc/codec"
)

// ListDocument streams a listing as a Kubernetes List (`ls -o json|yaml`),
// one item at a time: a listing of a million keys is never held whole.
type ListDocument struct {
	w io.Writer
	// json: JSON, else YAML.
	json  bool
	first bool
	// readFrom and readTo are the revisions a read across a compaction
	// spans (0: it kept to one).
	readFrom, readTo int64
}

const (
	jsonListHead = "{\n\"apiVersion\": \"v1\",\n\"kind\": \"List\",\n\"metadata\": {\"resourceVersion\": \"\"},\n\"items\": "
	yamlListHead = "apiVersion: v1\nkind: List\nmetadata:\n  resourceVersion: \"\"\nitems:"
)

// NewListDocument writes a List in JSON (asJSON) or YAML to w.
func NewListDocument(w io.Writer, asJSON bool) *ListDocument {
	return &ListDocument{w: w, json: asJSON, first: true}
}

// Add writes one item, after the List's head when it is the first.
func (d *ListDocument) Add(obj ListObject) error {
	if d.json {
		b, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		sep := ",\n"
		if d.first {
			sep = jsonListHead + "[\n"
			d.first = false
		}
		_, err = fmt.Fprintf(d.w, "%s%s", sep, b)
		return err
	}
	b, err := codec.YAML([]ListObject{obj})
	if err != nil {
		return err
	}
	if d.first {
		if _, err := io.WriteString(d.w, yamlListHead+"\n"); err != nil {
			return err
		}
		d.first = false
	}
	_, err = d.w.Write(b)
	return err
}

// Spans records that the items were read at revisions from to to (etcd
// was compacted during the read): Close writes them after the items, as
// readFromRevision and readToRevision, fields a kubectl List does not have.
func (d *ListDocument) Spans(from, to int64) { d.readFrom, d.readTo = from, to }

// Close ends the List (an empty one when no item was added), also that of
// a listing cut short.
func (d *ListDocument) Close() error {
	var end string
	switch {
	case d.json && d.first:
		end = jsonListHead + "[]"
	case d.json:
		end = "\n]"
	case d.first:
		end = yamlListHead + " []\n"
	}
	switch {
	case d.json && d.readFrom != 0:
		end += fmt.Sprintf(",\n\"readFromRevision\": %d,\n\"readToRevision\": %d", d.readFrom, d.readTo)
	case d.readFrom != 0:
		end += fmt.Sprintf("readFromRevision: %d\nreadToRevision: %d\n", d.readFrom, d.readTo)
	}
	if d.json {
		end += "\n}\n"
	}
	_, err := io.WriteString(d.w, end)
	return err
}
