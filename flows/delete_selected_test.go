package flows

import (
	"encoding/json"
	"testing"
	"time"
)

func TestObjectTime(t *testing.T) {
	for _, c := range []struct {
		name, object, want string
	}{
		{"event lastTimestamp", `{"kind":"Event","metadata":{"creationTimestamp":"2030-01-01T00:00:00Z"},"lastTimestamp":"2020-01-01T00:00:00Z","eventTime":"2021-01-01T00:00:00.000000Z"}`, "2020-01-01T00:00:00Z"},
		{"event series", `{"kind":"Event","metadata":{"creationTimestamp":"2030-01-01T00:00:00Z"},"lastTimestamp":null,"series":{"count":3,"lastObservedTime":"2022-01-01T00:00:00.123456Z"},"eventTime":"2021-01-01T00:00:00.000000Z"}`, "2022-01-01T00:00:00.123456Z"},
		{"event eventTime", `{"kind":"Event","metadata":{"creationTimestamp":"2030-01-01T00:00:00Z"},"eventTime":"2021-01-01T00:00:00.000000Z"}`, "2021-01-01T00:00:00Z"},
		{"event neither", `{"kind":"Event","metadata":{"creationTimestamp":"2030-01-01T00:00:00Z"},"eventTime":null}`, "2030-01-01T00:00:00Z"},
		{"configmap", `{"kind":"ConfigMap","metadata":{"creationTimestamp":"2030-01-01T00:00:00Z"},"lastTimestamp":"2020-01-01T00:00:00Z"}`, "2030-01-01T00:00:00Z"},
		{"no time", `{"kind":"ConfigMap","metadata":{"name":"x"}}`, ""},
	} {
		var content map[string]any
		if err := json.Unmarshal([]byte(c.object), &content); err != nil {
			t.Fatal(err)
		}
		got := ObjectTime(content)
		if c.want == "" {
			if !got.IsZero() {
				t.Errorf("%s: %v, want the zero time", c.name, got)
			}
			continue
		}
		want, _ := time.Parse(time.RFC3339Nano, c.want)
		if !got.Equal(want) {
			t.Errorf("%s: %v, want %v", c.name, got, want)
		}
	}
}
