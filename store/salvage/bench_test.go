package salvage_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etcdpvc/etcdpvc/store/salvage"
)

// benchDB is the offline benchmark data set (make bench-data).
func benchDB(b *testing.B) string {
	b.Helper()
	home, err := os.UserHomeDir()
	if err != nil {
		b.Skip(err)
	}
	p := filepath.Join(home, ".cache", "etcdpvc-bench", "bench-1000000.db")
	if _, err := os.Stat(p); err != nil {
		b.Skipf("%s: %v (make bench-data)", p, err)
	}
	return p
}

// BenchmarkReadAll reads the benchmark db once, sequentially: the
// baseline a salvage is measured against.
func BenchmarkReadAll(b *testing.B) {
	p := benchDB(b)
	buf := make([]byte, 8<<20)
	for b.Loop() {
		f, err := os.Open(p)
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{f}, buf)
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(n)
	}
}

// BenchmarkScan scans the undamaged benchmark db.
func BenchmarkScan(b *testing.B) {
	p := benchDB(b)
	for b.Loop() {
		res, _, err := salvage.SalvageFile(context.Background(), p, "", salvage.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(res.Report.FileSize)
		b.ReportMetric(float64(res.Report.Keys), "keys")
		if !res.Report.Complete {
			var text strings.Builder
			_ = res.Report.WriteText(&text)
			b.Fatalf("the undamaged benchmark db is not complete:\n%s", text.String())
		}
	}
}

// BenchmarkSalvage scans the undamaged benchmark db and writes the
// salvage.
func BenchmarkSalvage(b *testing.B) {
	p := benchDB(b)
	for b.Loop() {
		out := filepath.Join(b.TempDir(), "salvaged.db")
		res, w, err := salvage.SalvageFile(context.Background(), p, out, salvage.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(res.Report.FileSize)
		b.ReportMetric(float64(w.Size)/(1<<20), "MB-out")
		b.StopTimer()
		_ = os.Remove(out)
		b.StartTimer()
	}
}
