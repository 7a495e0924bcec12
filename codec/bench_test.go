package codec

import (
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkDecode decodes each corpus kind; it reports MB/s and allocations.
func BenchmarkDecode(b *testing.B) {
	for _, bin := range corpusFiles(b) {
		value := readFile(b, bin)
		name := strings.TrimSuffix(filepath.Base(bin), ".bin")
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(value)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := Decode(value); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEditMeta measures the wire-level undelete edit.
func BenchmarkEditMeta(b *testing.B) {
	value := readFile(b, "../fixtures/corpus/plain/persistentvolumeclaims__demo__www-web-0__terminating.bin")
	b.SetBytes(int64(len(value)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := EditMeta(value, MetaEdit{ClearDeletion: true}); err != nil {
			b.Fatal(err)
		}
	}
}
