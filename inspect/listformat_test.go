package inspect

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseListFormat(t *testing.T) {
	all := []string{FormatTable, FormatWide, FormatJSON, FormatYAML, FormatName, FormatJSONPath, FormatCustomColumns}
	files := map[string]string{"cols": "NAME   SIZE\n.metadata.name  {.spec.size}\n", "tmpl": "{.kind}"}
	read := func(name string) (string, error) {
		if s, ok := files[name]; ok {
			return s, nil
		}
		return "", errors.New("no such file")
	}
	for _, tc := range []struct {
		output    string
		noHeaders bool
		sortBy    string
		err       string
		columns   []Column
	}{
		{output: "table"},
		{output: "name"},
		{output: "jsonpath={.items[*].metadata.name}"},
		{output: "jsonpath-file=tmpl"},
		{output: "custom-columns=NAME:metadata.name,SIZE:{.spec.size}", noHeaders: true,
			columns: []Column{{"NAME", "{.metadata.name}"}, {"SIZE", "{.spec.size}"}}},
		{output: "custom-columns-file=cols", columns: []Column{{"NAME", "{.metadata.name}"}, {"SIZE", "{.spec.size}"}}},
		{output: "table", sortBy: "metadata.name"},
		{output: "jsonpath", err: `-o "jsonpath": must be one of`},
		{output: "json=x", err: "must be one of"},
		{output: "jsonpath=", err: "no template given"},
		{output: "jsonpath={.a", err: "error parsing jsonpath"},
		{output: "custom-columns=", err: "no custom columns given"},
		{output: "custom-columns=NAME", err: "expected <header>:<json-path-expr>"},
		{output: "custom-columns-file=none", err: "no such file"},
		{output: "json", noHeaders: true, err: "does not apply to -o json"},
		{output: "table", sortBy: "{.a", err: "--sort-by"},
	} {
		f, err := ParseListFormat(tc.output, all, tc.noHeaders, tc.sortBy, read)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %v, want %q", tc.output, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.output, err)
			continue
		}
		if tc.columns != nil {
			if diff := cmp.Diff(tc.columns, f.Columns); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.output, diff)
			}
		}
	}
}

func TestSortListed(t *testing.T) {
	item := func(name string, size any) Listed {
		spec := map[string]any{}
		if size != nil {
			spec["size"] = size
		}
		return Listed{ListItem: ListItem{Name: name}, Content: map[string]any{"spec": spec}}
	}
	names := func(items []Listed) []string {
		var out []string
		for _, it := range items {
			out = append(out, it.Name)
		}
		return out
	}
	items := []Listed{item("b", "5Gi"), item("a", "500Mi"), item("none", nil), item("c", "20Gi"), item("d", "5Gi"), {ListItem: ListItem{Name: "unread"}}}
	if err := sortListed(items, "{.spec.size}"); err != nil {
		t.Fatal(err)
	}
	// Without the field first (in key order), quantities by value, equal ones in key order.
	if diff := cmp.Diff([]string{"none", "unread", "a", "b", "d", "c"}, names(items)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	nums := []Listed{item("x", int64(10)), item("y", int64(9)), item("z", 2.5)}
	if err := sortListed(nums[:2], "{.spec.size}"); err != nil || names(nums[:2])[0] != "y" {
		t.Errorf("numbers: %v %v", names(nums[:2]), err)
	}
	var se *SortError
	if err := sortListed([]Listed{item("x", int64(1)), item("y", "a")}, "{.spec.size}"); !errors.As(err, &se) {
		t.Errorf("mixed types: %v", err)
	}
	if err := sortListed([]Listed{item("x", nil)}, "{.spec.size}"); !errors.As(err, &se) || !strings.Contains(err.Error(), "couldn't find any field") {
		t.Errorf("no object has the field: %v", err)
	}
}

func TestPrintName(t *testing.T) {
	for _, tc := range []struct{ apiVersion, kind, want string }{
		{"v1", "PersistentVolumeClaim", "persistentvolumeclaim/x\n"},
		{"apps/v1", "Deployment", "deployment.apps/x\n"},
		{"e2e.example.com/v1", "Widget", "widget.e2e.example.com/x\n"},
	} {
		var b strings.Builder
		if err := PrintName(&b, tc.apiVersion, tc.kind, "x"); err != nil || b.String() != tc.want {
			t.Errorf("%s %s: %q %v, want %q", tc.apiVersion, tc.kind, b.String(), err, tc.want)
		}
	}
}

func TestColumnCells(t *testing.T) {
	f, err := ParseListFormat("custom-columns=NAME:.metadata.name,PORTS:.spec.ports[*].port,NONE:.x", []string{FormatCustomColumns}, false, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	content := map[string]any{"metadata": map[string]any{"name": "a\x1b[31m"}, "spec": map[string]any{"ports": []any{map[string]any{"port": int64(80)}, map[string]any{"port": int64(443)}}}}
	cells, err := f.ColumnCells(content)
	if err != nil {
		t.Fatal(err)
	}
	// The cells are the values: the table escapes them (textout.Table).
	if diff := cmp.Diff([]string{"a\x1b[31m", "80,443", "<none>"}, cells); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
