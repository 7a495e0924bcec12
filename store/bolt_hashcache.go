package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/etcdpvc/etcdpvc/internal/regular"
)

// hashRecord remembers that a snapshot file's sha256 trailer was verified,
// together with everything that changes when the file does: size, mtime,
// ctime (which no one can set back), inode and device. A record whose file
// identity still matches lets a later OpenBolt skip hashing the file again.
type hashRecord struct {
	Path    string `json:"path"`
	Size    int64  `json:"size"`
	MtimeNS int64  `json:"mtimeNs"`
	CtimeNS int64  `json:"ctimeNs"`
	Inode   uint64 `json:"inode"`
	Device  uint64 `json:"device"`
	SHA256  string `json:"sha256"`
	// FileSHA256 is the whole file's sha256, computed with the trailer's
	// ("" in a record that does not know it).
	FileSHA256 string `json:"fileSha256,omitempty"`
}

// hashRecordPath is where the record for path lives in dir.
func hashRecordPath(dir, path string) string {
	sum := sha256.Sum256([]byte(path))
	return filepath.Join(dir, hex.EncodeToString(sum[:16])+".json")
}

// currentHashRecord describes path as it is now; ok is false where the
// platform cannot tell ctime and inode.
func currentHashRecord(path string, trailer string) (hashRecord, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return hashRecord{}, false
	}
	return hashRecordOf(path, fi, trailer)
}

// hashRecordOf describes the file fi, at path, with trailer.
func hashRecordOf(path string, fi os.FileInfo, trailer string) (hashRecord, bool) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return hashRecord{}, false
	}
	r, ok := fileIdentity(fi)
	if !ok {
		return hashRecord{}, false
	}
	r.Path, r.SHA256 = abs, trailer
	return r, true
}

// cachedVerified reports whether dir holds a record that path, with this
// trailer, was verified and has not changed since, and returns the file's
// sha256 that record holds ("" if none).
func cachedVerified(dir, path, trailer string) (string, bool) {
	if dir == "" {
		return "", false
	}
	cur, ok := currentHashRecord(path, trailer)
	if !ok {
		return "", false
	}
	return recorded(dir, cur)
}

// TrailerVerifiedEarlier reports whether dir (a BoltOptions.HashCacheDir)
// holds a record that the file at path, as fi describes it, was verified
// against its sha256 trailer (hex) and has not changed since: the record
// names the same size, mtime, ctime (which no one can set back), inode
// and device. fi should be the Stat of the file as opened, so that the
// record speaks of the file being read, not of what path names now.
func TrailerVerifiedEarlier(dir, path string, fi os.FileInfo, trailer string) bool {
	if dir == "" {
		return false
	}
	cur, ok := hashRecordOf(path, fi, trailer)
	if !ok {
		return false
	}
	_, ok = recorded(dir, cur)
	return ok
}

// RememberTrailerVerified records in dir that the file at path, as fi
// describes it, was verified against its sha256 trailer (hex), and that
// the whole file's sha256 is fileSum (hex; "" if not known): fi should
// be its Stat from before it was read, so that a change while it was read
// voids the record. Failures are ignored: the cache only saves time.
func RememberTrailerVerified(dir, path string, fi os.FileInfo, trailer, fileSum string) {
	if dir == "" {
		return
	}
	if cur, ok := hashRecordOf(path, fi, trailer); ok {
		cur.FileSHA256 = fileSum
		writeHashRecord(dir, cur)
	}
}

// recorded reports whether dir holds the record cur (whatever file
// sha256 either holds), and returns the file's sha256 the record holds.
func recorded(dir string, cur hashRecord) (string, bool) {
	b, err := regular.ReadFile(hashRecordPath(dir, cur.Path))
	if err != nil {
		return "", false
	}
	var rec hashRecord
	if json.Unmarshal(b, &rec) != nil {
		return "", false
	}
	fileSum := rec.FileSHA256
	rec.FileSHA256, cur.FileSHA256 = "", ""
	return fileSum, rec == cur
}

// rememberVerified records that path was verified, with the file's sha256
// fileSum. Failures are ignored: the cache only saves time.
func rememberVerified(dir, path, trailer, fileSum string) {
	if dir == "" {
		return
	}
	cur, ok := currentHashRecord(path, trailer)
	if !ok {
		return
	}
	cur.FileSHA256 = fileSum
	writeHashRecord(dir, cur)
}

// writeHashRecord writes cur to dir, replacing the record of its path.
func writeHashRecord(dir string, cur hashRecord) {
	b, err := json.Marshal(cur)
	if err != nil {
		return
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return
	}
	tmp, err := os.CreateTemp(dir, ".record-*")
	if err != nil {
		return
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return
	}
	if tmp.Close() != nil {
		return
	}
	_ = os.Rename(tmp.Name(), hashRecordPath(dir, cur.Path))
}

// VerifyTrailer verifies the sha256 trailer of the snapshot file at path
// as OpenBolt does and, when it matches, remembers that in cacheDir, so
// that OpenBolt of the unchanged file then skips hashing it: run beside
// other work (opening another file), it takes that hashing off the way.
// A file without a trailer, one remembered already, and cacheDir "" are
// left alone; a file that cannot be read or does not match, and a check
// ctx ends, are left for OpenBolt to find and report.
func VerifyTrailer(ctx context.Context, path, cacheDir string) {
	if cacheDir == "" {
		return
	}
	f, err := regular.Open(path)
	if err != nil {
		return
	}
	fi, err := f.Stat()
	f.Close()
	if err != nil || !hasSnapshotTrailer(fi.Size()) {
		return
	}
	b := &Bolt{path: path}
	_ = b.checkTrailer(ctx, fi.Size()-snapshotTrailerSize, false, cacheDir)
}
