package codec

import (
	encjson "encoding/json"
	"fmt"

	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// MetadataOf returns an object's JSON view's metadata object, or nil.
func MetadataOf(content map[string]any) map[string]any {
	m, _ := content["metadata"].(map[string]any)
	return m
}

// CopyContent deep-copies an object's JSON view (JSON-compatible data, as
// Object.Content holds it); integers stay int64, as apimachinery decodes
// them.
func CopyContent(m map[string]any) map[string]any {
	b, err := encjson.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("codec: copy of JSON data: %v", err))
	}
	out := map[string]any{}
	if err := utiljson.Unmarshal(b, &out); err != nil {
		panic(fmt.Sprintf("codec: copy of JSON data: %v", err))
	}
	return out
}
