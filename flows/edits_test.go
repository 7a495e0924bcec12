package flows

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/etcdpvc/etcdpvc/fixtures/etcdtest"
	"github.com/etcdpvc/etcdpvc/session"
	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/surgery"
)

// TestPatchEdit: the patch a patch command applies, from -p or
// --patch-file, and the forms refused before anything is read.
func TestPatchEdit(t *testing.T) {
	file := func(s string) func() (io.ReadCloser, error) {
		return func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(s)), nil }
	}
	unreadable := errors.New("open input: no such file")
	for _, tc := range []struct {
		name   string
		typ    string
		inline string
		file   func() (io.ReadCloser, error)
		want   string // the patch
		option string // the *OptionError's message holds this
		err    error
	}{
		{name: "inline", typ: surgery.PatchMerge, inline: `{"a":1}`, want: `{"a":1}`},
		{name: "from a file", typ: surgery.PatchJSON, file: file(`[{"op":"remove","path":"/a"}]`), want: `[{"op":"remove","path":"/a"}]`},
		{name: "another type", typ: "strategic", inline: `{}`, option: `--type "strategic": must be merge or json`},
		{name: "both", typ: surgery.PatchMerge, inline: `{}`, file: file(`{}`), option: "give -p or --patch-file, not both"},
		{name: "neither", typ: surgery.PatchMerge, option: "patch needs -p PATCH or --patch-file FILE"},
		{name: "a blank file", typ: surgery.PatchMerge, file: file(" \n"), option: "patch needs -p PATCH or --patch-file FILE"},
		{name: "a merge patch cut short", typ: surgery.PatchMerge, inline: `{"spec":`,
			option: "-p: the merge patch is not valid JSON: at line 1, column 9 (byte 8): unexpected end of JSON input"},
		{name: "a bad character", typ: surgery.PatchMerge, inline: `{"spec":x}`,
			option: "-p: the merge patch is not valid JSON: at line 1, column 9 (byte 9): invalid character 'x' looking for beginning of value"},
		{name: "a bad line of a file", typ: surgery.PatchJSON, file: file("[\n  {\"op\": \"remove\",,\n"),
			option: "--patch-file: the JSON patch is not valid JSON: at line 2, column 19 (byte 21): invalid character ',' looking for beginning of object key string"},
		{name: "a merge patch that is a list", typ: surgery.PatchMerge, inline: `[{"op":"remove","path":"/a"}]`,
			option: `-p: the merge patch is an array, not a JSON object ({"field": value, ...})`},
		{name: "a JSON patch that is an object", typ: surgery.PatchJSON, inline: `{"a":1}`,
			option: `-p: the JSON patch is an object, not an array of operations ([{"op": ..., "path": ...}, ...]; --type merge takes a merge patch)`},
		{name: "a file that cannot be opened", typ: surgery.PatchMerge, file: func() (io.ReadCloser, error) { return nil, unreadable }, err: unreadable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := PatchEdit(tc.typ, tc.inline, tc.file)
			switch {
			case tc.option != "":
				var oe *session.OptionError
				if !errors.As(err, &oe) || err.Error() != tc.option {
					t.Fatalf("error %v, want the *OptionError %q", err, tc.option)
				}
			case tc.err != nil:
				if !errors.Is(err, tc.err) {
					t.Fatalf("error %v, want %v", err, tc.err)
				}
			case err != nil:
				t.Fatal(err)
			case p.Type != tc.typ || string(p.Patch) != tc.want:
				t.Errorf("patch %s %q, want %s %q", p.Type, p.Patch, tc.typ, tc.want)
			}
		})
	}
}

// TestEdited: the edit of edit, from the YAML the editor changed, against
// a real etcd.
func TestEdited(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.Options{})
	const key = "/registry/configmaps/demo/web-config"
	c.Put(t, key, corpus(t, "configmaps__demo__web-config"))
	ctx := context.Background()
	s, err := Open(ctx, session.Options{Endpoints: c.Endpoints(), Prefix: "/registry"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	quit := errors.New("editor failed")
	for _, tc := range []struct {
		name string
		key  string
		edit func([]byte) ([]byte, error)
		err  error
		mode any // data.mode of the replacement
		// planErr is the error of planning the edit (its object read
		// again), nil when it plans.
		planErr error
	}{
		{name: "changed", key: key, edit: func(doc []byte) ([]byte, error) {
			return bytes.Replace(doc, []byte("mode: plain"), []byte("mode: edited"), 1), nil
		}, mode: "edited"},
		{name: "unchanged", key: key, edit: func(doc []byte) ([]byte, error) { return doc, nil }, mode: "plain"},
		{name: "the editor fails", key: key, edit: func([]byte) ([]byte, error) { return nil, quit }, err: quit},
		{name: "no object", key: "/registry/configmaps/demo/none", edit: func(doc []byte) ([]byte, error) { return doc, nil }, err: store.ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var shown []byte
			ed, err := s.Edited(ctx, tc.key, func(doc []byte) ([]byte, error) {
				shown = doc
				return tc.edit(doc)
			})
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("error %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(shown, []byte("name: web-config")) {
				t.Errorf("the editor was shown:\n%s", shown)
			}
			r, ok := ed.(surgery.Replace)
			if !ok {
				t.Fatalf("edit %T, want a surgery.Replace", ed)
			}
			data, _ := r.Content["data"].(map[string]any)
			if data["mode"] != tc.mode {
				t.Errorf("data.mode %v, want %v", data["mode"], tc.mode)
			}
			if _, err := s.Planner.MakePlan(ctx, s.Reader, tc.key, ed); !errors.Is(err, tc.planErr) {
				t.Errorf("plan: %v, want %v", err, tc.planErr)
			}
		})
	}
}
