package surgery_test

import (
	"fmt"
	"os"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/kubevalue"
	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/surgery"
)

// ExampleUndelete takes a claim stuck Terminating out of its deletion: the
// edit is a pure function of the stored object, at the wire level. (A
// command then plans it against the live key, shows the diff, backs the
// value up and writes it with a compare-and-swap: Planner.MakePlan,
// Execute.)
func ExampleUndelete() {
	const key = "/registry/persistentvolumeclaims/demo/www-web-0"
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
	cur := &kubevalue.Current{KV: store.KeyValue{Key: key, Value: value, ModRevision: 7}, Plain: value, Obj: obj}
	fmt.Println("before:", obj.Meta.DeletionTimestamp != nil, obj.Meta.Finalizers)
	out, err := surgery.Undelete{}.Transform(cur)
	if err != nil {
		fmt.Println(err)
		return
	}
	after, err := codec.Decode(out)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("after:", after.Meta.DeletionTimestamp != nil, after.Meta.Finalizers)
	// Output:
	// before: true [kubernetes.io/pvc-protection]
	// after: false [kubernetes.io/pvc-protection]
}
