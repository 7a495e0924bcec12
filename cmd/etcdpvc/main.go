// Command etcdpvc is break-glass surgery on Kubernetes objects stored in
// etcd: it decodes, edits with a durable backup and compare-and-swap, and
// reads etcd db and snapshot files offline.
package main

import (
	"context"
	"os"

	"github.com/etcdpvc/etcdpvc/internal/nice"
)

func main() {
	ctx, stop := interruptContext(context.Background())
	tuneGC()
	lowerPriority = nice.Lower
	stopProfile := startProfile()
	code := runAs(ctx, os.Args[0], os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stopProfile()
	stop()
	os.Exit(code)
}
