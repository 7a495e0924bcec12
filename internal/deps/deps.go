// Package deps pins the modules the project builds with while their
// importers are being written; it contains no code.
package deps

import (
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/rogpeppe/go-internal/testscript"
	_ "github.com/urfave/cli/v2"
	_ "go.etcd.io/bbolt"
	_ "go.etcd.io/etcd/api/v3/mvccpb"
	_ "go.etcd.io/etcd/client/v3"
	_ "go.etcd.io/etcd/server/v3/embed"
	_ "k8s.io/api/core/v1"
	_ "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	_ "k8s.io/apimachinery/pkg/runtime"
	_ "k8s.io/apiserver/pkg/server/options/encryptionconfig"
	_ "k8s.io/client-go/kubernetes/scheme"
	_ "k8s.io/kms/apis/v2"
	_ "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	_ "sigs.k8s.io/yaml"
)
