package codec

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestYAML prints values holding controls YAML may not carry raw,
// which sigs.k8s.io/yaml.Marshal refuses, quoted and readable back.
func TestYAML(t *testing.T) {
	in := map[string]any{"data": map[string]any{"k": "\x1b[2J\u009b2J\x7f\u202e é"}}
	if _, err := yaml.Marshal(in); err == nil {
		t.Log("sigs.k8s.io/yaml.Marshal now prints C1 controls: YAML may be dropped for it")
	}
	b, err := YAML(in)
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(string(b), "\x1b\u009b\x7f") {
		t.Errorf("a control is printed raw: %q", b)
	}
	var back map[string]any
	if err := yaml.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if got := back["data"].(map[string]any)["k"]; got != "\x1b[2J\u009b2J\x7f\u202e é" {
		t.Errorf("read back %q", got)
	}
}
