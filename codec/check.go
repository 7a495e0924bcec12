package codec

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// CheckAt reports whether value, stored at key, decodes as the apiserver
// decodes it, without building what Decode builds for display (the
// object's content as JSON-compatible data, which costs most of a
// decode): a protobuf object of a kind the scheme holds is decoded into
// its Go type, one of another kind has its metadata decoded, JSON is
// decoded whole. It returns the stored apiVersion and kind, or the error
// Decode would return (a Secret's bytes never quoted). A value CheckAt
// accepts may still be refused by Decode for bytes the protobuf carries
// unchecked (managedFields' raw JSON), which the apiserver does not read
// when it decodes either.
func CheckAt(key string, value []byte) (schema.GroupVersionKind, error) {
	redact := IsSecretKey(key)
	if Detect(value) != FormatProtobuf {
		obj, err := decode(value, redact)
		if err != nil {
			return schema.GroupVersionKind{}, err
		}
		return obj.GVK, nil
	}
	env, err := ParseUnknown(value)
	if err != nil {
		return schema.GroupVersionKind{}, fmt.Errorf("decode: %w", err)
	}
	gv, err := schema.ParseGroupVersion(env.APIVersion)
	if err != nil {
		return schema.GroupVersionKind{}, malformed("decode: envelope apiVersion %q: %v", env.APIVersion, err)
	}
	gvk := gv.WithKind(env.Kind)
	if Known(gvk) {
		if _, _, err := protoSerializer.Decode(value, nil, nil); err != nil {
			return gvk, malformed("decode %s: %v", gvk.Kind, err)
		}
		return gvk, nil
	}
	if _, _, err := splitMetadata(env.Raw); err != nil {
		return gvk, malformed("decode %s: %v", gvk.Kind, err)
	}
	return gvk, nil
}
