package inspect

import (
	"encoding/json"
	"fmt"
	"io"

	"sigs.k8s.io/yaml"
)

// ListDocument streams a listing as a Kubernetes List (`ls -o json|yaml`),
// one item at a time: a listing of a million keys is never held whole.
type ListDocument struct {
	w io.Writer
	// json: JSON, else YAML.
	json  bool
	first bool
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
	b, err := yaml.Marshal([]ListObject{obj})
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

// Close ends the List (an empty one when no item was added), also that of
// a listing cut short.
func (d *ListDocument) Close() error {
	var end string
	switch {
	case d.json && d.first:
		end = jsonListHead + "[]\n}\n"
	case d.json:
		end = "\n]\n}\n"
	case d.first:
		end = yamlListHead + " []\n"
	}
	_, err := io.WriteString(d.w, end)
	return err
}
