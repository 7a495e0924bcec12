package codec_test

import (
	"fmt"
	"os"

	"github.com/etcdpvc/etcdpvc/codec"
)

// ExampleDecode decodes a value as the kube-apiserver stored it (its
// protobuf envelope here) into its kind and metadata.
func ExampleDecode() {
	value, err := os.ReadFile("../fixtures/corpus/plain/persistentvolumeclaims__demo__www-web-0__terminating.bin")
	if err != nil {
		fmt.Println(err)
		return
	}
	obj, err := codec.Decode(value)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(obj.Format, obj.GVK.Kind, obj.Meta.Namespace, obj.Meta.Name, obj.Meta.DeletionTimestamp != nil)
	// Output: protobuf PersistentVolumeClaim demo www-web-0 true
}
