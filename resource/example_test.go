package resource_test

import (
	"fmt"

	"github.com/etcdpvc/etcdpvc/resource"
)

// ExampleResolver_ParseArgs names an object as kubectl does and finds its etcd key.
func ExampleResolver_ParseArgs() {
	ref, err := resource.Resolver{}.ParseArgs("/registry", []string{"pvc", "www-web-0"}, "demo", "")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(ref.Key)
	// Output: /registry/persistentvolumeclaims/demo/www-web-0
}

// ExampleParseKey reads an etcd key back into a resource, namespace and
// name.
func ExampleParseKey() {
	r, ns, name, ok := resource.ParseKey("/registry", "/registry/deployments/demo/web")
	fmt.Println(r.Plural, r.Group, ns, name, ok)
	// Output: deployments apps demo web true
}
