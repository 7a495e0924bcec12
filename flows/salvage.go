package flows

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/etcdpvc/etcdpvc/inspect"
	"github.com/etcdpvc/etcdpvc/session"
	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/store/salvage"
)

// SalvageRequest is what `salvage` reads and writes.
type SalvageRequest struct {
	// In is the damaged db file (--db), Out the snapshot to write (--out).
	In, Out string
	// JSON writes the report as JSON.
	JSON bool
}

// Salvage reads the damaged db file r.In page by page (store/salvage),
// never writing it, and writes what survives to r.Out as a snapshot
// `etcdutl snapshot restore` accepts: each key's newest revision whose
// value the apiserver can read. The report goes to w. A salvage that did
// not establish that nothing was lost (Report.Complete) is incomplete
// (exit status 10), the snapshot written all the same.
func Salvage(ctx context.Context, o session.Options, w io.Writer, warn func(string), r SalvageRequest) error {
	if r.In == "" {
		return usageError("", "salvage reads a damaged db file: give it with --db FILE")
	}
	if r.Out == "" {
		return usageError("", "salvage writes what survives to a new snapshot file: give it with --out NEW.db (the input is never written)")
	}
	if store.IsKineURL(r.In) || store.IsSQLite(r.In) {
		return &session.OptionError{Option: "--db " + store.RedactKineURL(r.In), Err: fmt.Errorf("salvage: %w: it reads a damaged etcd db's pages; %s", store.ErrKineDB, store.KineDBHint)}
	}
	if same, _ := sameFile(r.In, r.Out); same || filepath.Clean(r.In) == filepath.Clean(r.Out) {
		return usageError("", "--out %s is the input: salvage never writes its input", r.Out)
	}
	o.DB, o.Out = r.In, ""
	ws, err := session.Kubeadm(&o)
	if err != nil {
		return err
	}
	for _, m := range ws {
		warn(m)
	}
	enc, err := session.LoadEncryption(ctx, o)
	if err != nil {
		return err
	}
	if enc != nil {
		defer enc.Close()
	}
	res, written, err := salvage.SalvageFile(ctx, r.In, r.Out, session.SalvageOptions(ctx, o, enc))
	if res == nil {
		return err
	}
	if werr := writeSalvageReport(w, res.Report, written, r.JSON); werr != nil {
		return werr
	}
	if err != nil {
		return err
	}
	if !res.Report.Complete {
		return &hintedError{&incompleteError{msg: fmt.Sprintf("salvage of %s is not complete: %s holds what survives, not everything (the report says what is missing)", r.In, r.Out)},
			"check what the report lists as lost before restoring it; `etcdpvc --db " + r.Out + " ls -A` reads the salvage"}
	}
	return nil
}

// writeSalvageReport writes the report, and what was written, as text or
// JSON.
func writeSalvageReport(w io.Writer, rep *salvage.Report, written *salvage.Written, asJSON bool) error {
	if asJSON {
		return inspect.WriteDocument(w, "json", struct {
			Report  *salvage.Report  `json:"report"`
			Written *salvage.Written `json:"written,omitempty"`
		}{rep, written})
	}
	if err := rep.WriteText(w); err != nil {
		return err
	}
	if written == nil {
		return nil
	}
	_, err := fmt.Fprintf(w, "written: %s (%d bytes, sha256 %s, trailer %s): %d keys, %d leases, compaction revision %d\n%s",
		written.Path, written.Size, written.FileSHA256, written.TrailerSHA256, written.Revisions, written.Leases, written.CompactRevision, SnapshotRunbook(written.Path))
	return err
}

// sameFile reports whether a and b are one existing file.
func sameFile(a, b string) (bool, error) {
	fa, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	fb, err := os.Stat(b)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	return os.SameFile(fa, fb), nil
}

// SalvageVerdict is the outcome of a read of a session opened with
// --salvage: nil when the salvage established that nothing was lost, else
// incomplete (exit status 10), saying what was not read.
func SalvageVerdict(r *salvage.Report) error {
	msg := session.SalvageLoss(r)
	if msg == "" {
		return nil
	}
	return &hintedError{&incompleteError{msg: "--salvage: " + msg}, "an object not listed may be on a page that did not survive: the report of `etcdpvc --db FILE salvage --out NEW.db` lists the pages and revision ranges lost"}
}
