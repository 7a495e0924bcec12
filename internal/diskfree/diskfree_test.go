package diskfree

import "testing"

func TestAvailable(t *testing.T) {
	n, err := Available(t.TempDir())
	if err != nil || n <= 0 {
		t.Fatalf("Available: %d, %v; want a positive count", n, err)
	}
	if _, err := Available("/does/not/exist"); err == nil {
		t.Error("Available of a missing directory: no error")
	}
}
