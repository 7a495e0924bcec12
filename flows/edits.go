package flows

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/etcdpvc/etcdpvc/surgery"
)

// PatchEdit is the edit of patch: a patch of type typ (surgery.PatchMerge
// or surgery.PatchJSON) given inline (-p), or read from file (--patch-file;
// nil: none given). Another type, both forms, a patch that is blank, or
// one that is not a patch of its type (surgery.Patch.Check: the position
// of a JSON syntax error) is an *OptionError; file is opened only when
// inline is empty.
func PatchEdit(typ, inline string, file func() (io.ReadCloser, error)) (surgery.Patch, error) {
	if typ != surgery.PatchMerge && typ != surgery.PatchJSON {
		return surgery.Patch{}, usageError("", "--type %q: must be merge or json", typ)
	}
	patch, src := []byte(inline), "-p"
	if file != nil {
		src = "--patch-file"
		if len(patch) > 0 {
			return surgery.Patch{}, usageError("", "give -p or --patch-file, not both")
		}
		r, err := file()
		if err != nil {
			return surgery.Patch{}, err
		}
		var buf bytes.Buffer
		_, err = buf.ReadFrom(r)
		r.Close()
		if err != nil {
			return surgery.Patch{}, fmt.Errorf("read patch: %w", err)
		}
		patch = buf.Bytes()
	}
	if len(bytes.TrimSpace(patch)) == 0 {
		return surgery.Patch{}, usageError("", "patch needs -p PATCH or --patch-file FILE")
	}
	p := surgery.Patch{Type: typ, Patch: patch}
	if err := p.Check(); err != nil {
		hint := "fix the patch there; in a shell, put it in single quotes so that it is passed whole"
		switch {
		case typ == surgery.PatchMerge && bytes.HasPrefix(bytes.TrimSpace(patch), []byte("[")):
			hint = "a list of operations is a JSON patch: add --type json"
		case typ == surgery.PatchJSON && bytes.HasPrefix(bytes.TrimSpace(patch), []byte("{")):
			hint = "an object of fields is a merge patch: leave out --type json"
		}
		return surgery.Patch{}, usageError(hint, "%s: %w", src, err)
	}
	return p, nil
}

// Edited is the edit of edit: the object at key as editable YAML
// (surgery.EditableYAML), changed by edit (the user's editor), replaces
// the stored one where it was changed (surgery.ParseEdited,
// surgery.Replace).
func (s *Session) Edited(ctx context.Context, key string, edit func(doc []byte) ([]byte, error)) (surgery.Edit, error) {
	cur, err := s.Planner.Load(ctx, s.Reader, key, 0)
	if err != nil {
		return nil, err
	}
	doc, err := surgery.EditableYAML(cur)
	if err != nil {
		return nil, err
	}
	edited, err := edit(doc)
	if err != nil {
		return nil, err
	}
	content, err := surgery.ParseEdited(edited)
	if err != nil {
		return nil, err
	}
	return surgery.Replace{Content: content, Revision: cur.KV.ModRevision}, nil
}
