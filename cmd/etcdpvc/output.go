package main

import (
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/etcdpvc/etcdpvc/inspect"
	"github.com/etcdpvc/etcdpvc/internal/regular"
)

// openInput opens a named input; "-" or "" is stdin.
func openInput(e *env, name string) (io.ReadCloser, error) {
	if name == "" || name == "-" {
		return io.NopCloser(e.stdin), nil
	}
	f, err := regular.Open(name)
	if err != nil {
		return nil, fmt.Errorf("open input: %w", err)
	}
	return f, nil
}

// printOptions says how to print an object.
type printOptions = inspect.ObjectFormat

// printObject writes an object's content as YAML or JSON.
func printObject(w io.Writer, content map[string]any, o printOptions) error {
	b, err := inspect.RenderObject(content, o)
	if err != nil {
		return fmt.Errorf("print: %w", err)
	}
	_, err = w.Write(b)
	return err
}

// managedFieldsFlag is --show-managed-fields, off by default as in kubectl.
func managedFieldsFlag() cli.Flag {
	return &cli.BoolFlag{Name: "show-managed-fields", Usage: "print metadata.managedFields (hidden by default, as in kubectl)"}
}

// indexFlag is --index of get and recover.
func indexFlag() cli.Flag {
	return &cli.Uint64Flag{Name: "index", Usage: "with --wal: read the object as of this raft index of the log"}
}

// readTemplate reads a -o jsonpath-file= or custom-columns-file= file.
func readTemplate(name string) (string, error) {
	b, err := regular.ReadFile(name)
	return string(b), err
}

// parseFormat parses -o among allowed, --no-headers and --sort-by (the
// flags a command has; "" and false for the others): a format that
// cannot be used is a usage error.
func parseFormat(output string, allowed []string, noHeaders bool, sortBy string) (inspect.ListFormat, error) {
	f, err := inspect.ParseListFormat(output, allowed, noHeaders, sortBy, readTemplate)
	if err != nil {
		return f, usagef("%v", err)
	}
	return f, nil
}

// kubectlFormatsHelp says what -o name, jsonpath and custom-columns print
// and what they read.
const kubectlFormatsHelp = "-o name prints kubectl's resource/name (persistentvolumeclaim/www-web-0, deployment.apps/web).\n" +
	"-o jsonpath=TEMPLATE (or jsonpath-file=FILE) and -o custom-columns=HEADER:JSONPATH,... (or\n" +
	"custom-columns-file=FILE: a line of headers, a line of JSONPaths) are kubectl's, with its printers and\n" +
	"JSONPath engine; they decode each object whole (a Secret's values are shown as their sizes)."
