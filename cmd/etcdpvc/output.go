package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v2"
	"sigs.k8s.io/yaml"

	"github.com/etcdpvc/etcdpvc/codec"
)

// openInput opens a named input; "-" or "" is stdin.
func openInput(e *env, name string) (io.ReadCloser, error) {
	if name == "" || name == "-" {
		return io.NopCloser(e.stdin), nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("open input: %w", err)
	}
	return f, nil
}

// printOptions says how to print an object.
type printOptions struct {
	Output      string // yaml or json
	ShowSecrets bool
	// HideManagedFields drops metadata.managedFields, as kubectl does by
	// default.
	HideManagedFields bool
}

func checkOutput(o string, allowed ...string) error {
	for _, a := range allowed {
		if o == a {
			return nil
		}
	}
	return usagef("-o %q: must be one of %v", o, allowed)
}

// printObject writes an object's content as YAML or JSON.
func printObject(w io.Writer, content map[string]any, o printOptions) error {
	if !o.ShowSecrets {
		content = codec.RedactSecret(content)
	}
	if o.HideManagedFields {
		content = withoutManagedFields(content)
	}
	switch o.Output {
	case "json":
		// No HTML escaping: redaction markers print as <redacted: N bytes>.
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "    ")
		if err := enc.Encode(content); err != nil {
			return fmt.Errorf("print: %w", err)
		}
		_, err := w.Write(buf.Bytes())
		return err
	default:
		b, err := yaml.Marshal(content)
		if err != nil {
			return fmt.Errorf("print: %w", err)
		}
		_, err = w.Write(b)
		return err
	}
}

// withoutManagedFields returns content without metadata.managedFields (a
// copy when there were some).
func withoutManagedFields(content map[string]any) map[string]any {
	md, ok := content["metadata"].(map[string]any)
	if !ok || md["managedFields"] == nil {
		return content
	}
	out := make(map[string]any, len(content))
	for k, v := range content {
		out[k] = v
	}
	m := make(map[string]any, len(md))
	for k, v := range md {
		if k != "managedFields" {
			m[k] = v
		}
	}
	out["metadata"] = m
	return out
}

// managedFieldsFlag is --show-managed-fields, off by default as in kubectl.
func managedFieldsFlag() cli.Flag {
	return &cli.BoolFlag{Name: "show-managed-fields", Usage: "print metadata.managedFields (hidden by default, as in kubectl)"}
}
