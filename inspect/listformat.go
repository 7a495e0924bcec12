package inspect

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/util/jsonpath"

	"github.com/etcdpvc/etcdpvc/internal/textout"
)

// The output formats kubectl has besides tables and documents: -o name,
// -o jsonpath=TEMPLATE (and jsonpath-file=FILE), -o custom-columns=SPEC
// (and custom-columns-file=FILE), and --sort-by, with kubectl's own
// printers (k8s.io/cli-runtime/pkg/printers) and JSONPath engine
// (k8s.io/client-go/util/jsonpath). Custom columns, the relaxed JSONPath
// of a column or --sort-by and the sort order are kubectl's
// (k8s.io/kubectl/pkg/cmd/get: customcolumn.go, sorter.go), which this
// module does not import (it would bring in kubectl's command tree).

// Output formats.
const (
	FormatTable         = "table"
	FormatWide          = "wide"
	FormatJSON          = "json"
	FormatYAML          = "yaml"
	FormatName          = "name"
	FormatJSONPath      = "jsonpath"
	FormatCustomColumns = "custom-columns"
)

// ListFormat is how a listing or an object is written (-o, --no-headers,
// --sort-by).
type ListFormat struct {
	// Kind is one of the Format constants.
	Kind string
	// Template is -o jsonpath's template, parsed.
	Template *printers.JSONPathPrinter
	// Columns are -o custom-columns' columns.
	Columns []Column
	// NoHeaders leaves out a table's headers.
	NoHeaders bool
	// SortBy is --sort-by's JSONPath, relaxed as kubectl relaxes it
	// ("" keeps key order).
	SortBy string
}

// Column is a custom column: its header and JSONPath (relaxed to
// "{.a.b}").
type Column struct {
	Header    string
	FieldSpec string
}

// NeedsObject reports whether the format reads each object whole (its
// content, not only the metadata a listing decodes).
func (f ListFormat) NeedsObject() bool {
	return f.Kind == FormatJSONPath || f.Kind == FormatCustomColumns || f.SortBy != ""
}

// IsTable reports whether the format is a table (of the listing's
// columns or custom ones).
func (f ListFormat) IsTable() bool {
	return f.Kind == FormatTable || f.Kind == FormatWide || f.Kind == FormatCustomColumns
}

// FormatError is an -o, --no-headers or --sort-by that cannot be used.
type FormatError struct{ Msg string }

func (e *FormatError) Error() string { return e.Msg }

// ParseListFormat parses -o (output) among allowed (FormatTable, ...;
// jsonpath and custom-columns take their forms with =, and -file= forms
// whose files readFile reads), --no-headers and --sort-by.
func ParseListFormat(output string, allowed []string, noHeaders bool, sortBy string, readFile func(name string) (string, error)) (ListFormat, error) {
	kind, arg, hasArg := strings.Cut(output, "=")
	file := false
	switch kind {
	case "jsonpath-file", "custom-columns-file":
		kind, file = strings.TrimSuffix(kind, "-file"), true
	}
	if !slices.Contains(allowed, kind) || hasArg != (kind == FormatJSONPath || kind == FormatCustomColumns) {
		var forms []string
		for _, a := range allowed {
			switch a {
			case FormatJSONPath:
				forms = append(forms, "jsonpath=TEMPLATE", "jsonpath-file=FILE")
			case FormatCustomColumns:
				forms = append(forms, "custom-columns=SPEC", "custom-columns-file=FILE")
			default:
				forms = append(forms, a)
			}
		}
		return ListFormat{}, &FormatError{fmt.Sprintf("-o %q: must be one of %s", output, strings.Join(forms, ", "))}
	}
	f := ListFormat{Kind: kind, NoHeaders: noHeaders}
	if file {
		if arg == "" {
			return f, &FormatError{fmt.Sprintf("-o %s-file=FILE: name the file", kind)}
		}
		b, err := readFile(arg)
		if err != nil {
			return f, &FormatError{fmt.Sprintf("-o %s-file=%s: %v", kind, arg, err)}
		}
		arg = b
	}
	var err error
	switch kind {
	case FormatJSONPath:
		if arg == "" {
			return f, &FormatError{"-o jsonpath: template format specified but no template given"}
		}
		if f.Template, err = printers.NewJSONPathPrinter(arg); err != nil {
			return f, &FormatError{fmt.Sprintf("-o jsonpath: error parsing jsonpath %s: %v", arg, err)}
		}
		// kubectl's --allow-missing-template-keys, true by default.
		f.Template.AllowMissingKeys(true)
	case FormatCustomColumns:
		if file {
			f.Columns, err = columnsFromTemplate(arg)
		} else {
			f.Columns, err = columnsFromSpec(arg)
		}
		if err != nil {
			return f, &FormatError{"-o custom-columns: " + err.Error()}
		}
	}
	if noHeaders && !f.IsTable() {
		return f, &FormatError{fmt.Sprintf("--no-headers leaves out a table's headers: it does not apply to -o %s", kind)}
	}
	if sortBy != "" {
		if f.SortBy, err = relaxedJSONPath(sortBy); err == nil {
			err = jsonpath.New("sorting").Parse(f.SortBy)
		}
		if err != nil {
			return f, &FormatError{fmt.Sprintf("--sort-by %q: %v", sortBy, err)}
		}
	}
	return f, nil
}

// jsonRegexp is kubectl's relaxed JSONPath: a.b, .a.b, {a.b} or {.a.b}.
var jsonRegexp = regexp.MustCompile(`^\{\.?([^{}]+)\}$|^\.?([^{}]+)$`)

// relaxedJSONPath is kubectl's RelaxedJSONPathExpression: any of the
// relaxed forms as "{.a.b}".
func relaxedJSONPath(s string) (string, error) {
	if s == "" {
		return s, nil
	}
	m := jsonRegexp.FindStringSubmatch(s)
	if m == nil {
		return "", errors.New("unexpected path string, expected a 'name1.name2' or '.name1.name2' or '{name1.name2}' or '{.name1.name2}'")
	}
	if m[1] != "" {
		return "{." + m[1] + "}", nil
	}
	return "{." + m[2] + "}", nil
}

// columnsFromSpec parses kubectl's HEADER:JSONPATH,... .
func columnsFromSpec(spec string) ([]Column, error) {
	if spec == "" {
		return nil, errors.New("custom-columns format specified but no custom columns given")
	}
	var cols []Column
	for _, part := range strings.Split(spec, ",") {
		header, field, ok := strings.Cut(part, ":")
		if !ok {
			return nil, fmt.Errorf("unexpected custom-columns spec: %s, expected <header>:<json-path-expr>", part)
		}
		c, err := newColumn(header, field)
		if err != nil {
			return nil, err
		}
		cols = append(cols, c)
	}
	return cols, nil
}

// columnsFromTemplate parses kubectl's custom-columns file: a line of
// headers and a line of JSONPaths, separated by white space.
func columnsFromTemplate(tmpl string) ([]Column, error) {
	sc := bufio.NewScanner(strings.NewReader(tmpl))
	if !sc.Scan() {
		return nil, errors.New("invalid template, missing header line. Expected format is one line of space separated headers, one line of space separated column specs")
	}
	headers := strings.Fields(sc.Text())
	if !sc.Scan() {
		return nil, errors.New("invalid template, missing spec line. Expected format is one line of space separated headers, one line of space separated column specs")
	}
	specs := strings.Fields(sc.Text())
	if len(headers) != len(specs) {
		return nil, fmt.Errorf("number of headers (%d) and field specifications (%d) don't match", len(headers), len(specs))
	}
	cols := make([]Column, len(headers))
	for i := range headers {
		c, err := newColumn(headers[i], specs[i])
		if err != nil {
			return nil, err
		}
		cols[i] = c
	}
	return cols, nil
}

// newColumn relaxes and checks one column's JSONPath.
func newColumn(header, field string) (Column, error) {
	spec, err := relaxedJSONPath(field)
	if err != nil {
		return Column{}, err
	}
	if err := jsonpath.New("column").Parse(spec); err != nil {
		return Column{}, fmt.Errorf("column %s: %w", header, err)
	}
	return Column{Header: header, FieldSpec: spec}, nil
}

// Headers are the custom columns' headers.
func (f ListFormat) Headers() []string {
	h := make([]string, len(f.Columns))
	for i, c := range f.Columns {
		h[i] = c.Header
	}
	return h
}

// ColumnCells are the custom columns of an object's content, as kubectl
// prints them: each match of the column's JSONPath, comma-separated,
// "<none>" for none (the table escapes terminal controls).
func (f ListFormat) ColumnCells(content map[string]any) ([]string, error) {
	cells := make([]string, len(f.Columns))
	for i, c := range f.Columns {
		p := jsonpath.New("column").AllowMissingKeys(true)
		if err := p.Parse(c.FieldSpec); err != nil {
			return nil, err
		}
		values, err := p.FindResults(content)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", c.Header, err)
		}
		var out []string
		if len(values) == 0 || len(values[0]) == 0 {
			out = append(out, "<none>")
		}
		for _, vs := range values {
			for _, v := range vs {
				out = append(out, fmt.Sprint(v.Interface()))
			}
		}
		cells[i] = strings.Join(out, ",")
	}
	return cells, nil
}

// ExecuteTemplate writes the -o jsonpath template over data (an object's
// content, or a List's), without kubectl's dump of the whole object on an
// error.
func (f ListFormat) ExecuteTemplate(w io.Writer, data map[string]any) error {
	if err := f.Template.Execute(w, data); err != nil {
		return fmt.Errorf("error executing jsonpath: %w", err)
	}
	return nil
}

// PrintName writes kubectl's -o name of an object: resource/name, the
// kind's lowercase name, with the group for a kind outside the core
// group ("persistentvolumeclaim/www-web-0", "deployment.apps/web").
func PrintName(w io.Writer, apiVersion, kind, name string) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.FromAPIVersionAndKind(apiVersion, kind))
	u.SetName(name)
	return (&printers.NamePrinter{}).PrintObj(u, w)
}

// sortKey is an object's --sort-by value: the first match of the path in
// content (invalid when none).
func sortKey(p *jsonpath.JSONPath, content map[string]any) (reflect.Value, error) {
	if content == nil {
		return reflect.Value{}, nil
	}
	values, err := p.FindResults(content)
	if err != nil || len(values) == 0 || len(values[0]) == 0 {
		return reflect.Value{}, err
	}
	return values[0][0], nil
}

// SortError is a --sort-by that cannot sort the objects listed.
type SortError struct{ Msg string }

func (e *SortError) Error() string { return e.Msg }

// sortListed sorts items by the JSONPath path of their content as
// kubectl's --sort-by does: objects without the field first, numbers by
// value, strings that are both quantities by quantity, other strings
// bytewise; the sort is stable (equal keys keep key order). It is an
// error when no object has the field, or when two values cannot be
// compared.
func sortListed(items []Listed, path string) error {
	p := jsonpath.New("sorting").AllowMissingKeys(true)
	if err := p.Parse(path); err != nil {
		return err
	}
	keys := make([]reflect.Value, len(items))
	found := false
	for i, it := range items {
		k, err := sortKey(p, it.Content)
		if err != nil {
			return &SortError{fmt.Sprintf("--sort-by %s: %v", path, err)}
		}
		keys[i], found = k, found || k.IsValid()
	}
	if !found {
		return &SortError{fmt.Sprintf("couldn't find any field with path %q in the list of objects", path)}
	}
	idx := make([]int, len(items))
	for i := range idx {
		idx[i] = i
	}
	var sortErr error
	slices.SortStableFunc(idx, func(a, b int) int {
		ka, kb := keys[a], keys[b]
		switch {
		case !ka.IsValid() && !kb.IsValid():
			return 0
		case !ka.IsValid():
			return -1
		case !kb.IsValid():
			return 1
		}
		less, err := isLess(ka, kb)
		if err != nil && sortErr == nil {
			sortErr = &SortError{fmt.Sprintf("--sort-by %s: field is an unsortable type: %v", path, err)}
		}
		if less {
			return -1
		}
		if more, _ := isLess(kb, ka); more {
			return 1
		}
		return 0
	})
	if sortErr != nil {
		return sortErr
	}
	sorted := make([]Listed, len(items))
	for i, j := range idx {
		sorted[i] = items[j]
	}
	copy(items, sorted)
	return nil
}

// isLess is kubectl's comparison of two --sort-by values (sorter.go's
// isLess) for the values of decoded JSON: numbers, strings (quantities
// when both parse as one), booleans are not sortable, lists element by
// element.
func isLess(i, j reflect.Value) (bool, error) {
	for i.Kind() == reflect.Interface && !i.IsNil() {
		i = i.Elem()
	}
	for j.Kind() == reflect.Interface && !j.IsNil() {
		j = j.Elem()
	}
	if i.Kind() != j.Kind() {
		return false, fmt.Errorf("%v and %v cannot be compared", i.Kind(), j.Kind())
	}
	switch i.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return i.Int() < j.Int(), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return i.Uint() < j.Uint(), nil
	case reflect.Float32, reflect.Float64:
		return i.Float() < j.Float(), nil
	case reflect.String:
		qi, erri := resource.ParseQuantity(i.String())
		qj, errj := resource.ParseQuantity(j.String())
		if erri == nil && errj == nil {
			return qi.Cmp(qj) < 0, nil
		}
		return i.String() < j.String(), nil
	case reflect.Slice, reflect.Array:
		for x := 0; x < min(i.Len(), j.Len()); x++ {
			less, err := isLess(i.Index(x), j.Index(x))
			if err != nil || !less {
				return less, err
			}
		}
		return true, nil
	}
	return false, fmt.Errorf("unsortable type: %v", i.Kind())
}

// PrintObject writes one object's content (a Secret's values already
// redacted) in f: -o name, jsonpath over the object itself (as kubectl's
// get of one object), or custom columns.
func PrintObject(w io.Writer, content map[string]any, f ListFormat) error {
	switch f.Kind {
	case FormatName:
		apiVersion, _ := content["apiVersion"].(string)
		kind, _ := content["kind"].(string)
		name, _ := lookup(content, "metadata", "name").(string)
		return PrintName(w, apiVersion, kind, name)
	case FormatJSONPath:
		return f.ExecuteTemplate(w, content)
	case FormatCustomColumns:
		var t *textout.Table
		if f.NoHeaders {
			t = textout.NewHeadlessTable(w, len(f.Columns))
		} else {
			t = textout.NewTable(w, f.Headers()...)
		}
		cells, err := f.ColumnCells(content)
		if err != nil {
			return err
		}
		return t.Rows([][]string{cells})
	}
	return &FormatError{fmt.Sprintf("-o %s does not print one object", f.Kind)}
}
