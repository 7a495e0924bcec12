package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdEtcdFill writes ConfigMaps of about 8 KiB (JSON, as the apiserver
// reads them) over and over to KEYS keys until
// etcd refuses a write with "database space exceeded" (its NOSPACE alarm):
//
//	etcdfill KEYS
func cmdEtcdFill(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: etcdfill KEYS")
	}
	keys, err := strconv.Atoi(args[0])
	ts.Check(err)
	sc := scripts.get(ts)
	if sc == nil || sc.cli == nil {
		ts.Fatalf("etcdfill: no cluster; run etcd start first")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	random := make([]byte, 4<<10)
	for i := 0; i < 100000; i++ {
		rand.Read(random)
		name := fmt.Sprintf("cm-%d", i%keys)
		value := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":"fill"},"data":{"x":"%x"}}`, name, random)
		_, err := sc.cli.Put(ctx, "/registry/configmaps/fill/"+name, value)
		if err != nil {
			if strings.Contains(err.Error(), "database space exceeded") {
				return
			}
			ts.Fatalf("etcdfill: write %d: %v", i, err)
		}
	}
	ts.Fatalf("etcdfill: no NOSPACE alarm after 100000 writes")
}
