package main

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
)

func TestZZProf(t *testing.T) {
	args := os.Getenv("ZZ_ARGS")
	if args == "" {
		t.Skip()
	}
	code := run(context.Background(), strings.Fields(args), strings.NewReader(""), io.Discard, os.Stderr)
	if code != 0 {
		t.Fatal(code)
	}
}
