package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/internal/exitcode"
)

// TestCorruptManagedFieldsExitStatus: a stored value whose managedFields
// are not JSON cannot be decoded: exit status 6, like any other value that
// cannot be decoded, not 1.
func TestCorruptManagedFieldsExitStatus(t *testing.T) {
	stored, err := os.ReadFile("../../fixtures/corpus/plain/persistentvolumeclaims__demo__www-web-1__bound.bin")
	if err != nil {
		t.Fatal(err)
	}
	obj, err := codec.Decode(stored)
	if err != nil {
		t.Fatal(err)
	}
	pvc := obj.Typed.(*corev1.PersistentVolumeClaim).DeepCopy()
	pvc.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "m", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":`)}}}
	value, err := codec.EncodeTyped(pvc, codec.FormatProtobuf)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "pvc.bin")
	if err := os.WriteFile(file, value, 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"decode", file}, strings.NewReader(""), &stdout, &stderr)
	if code != exitcode.Decode {
		t.Errorf("exit status %d, want %d; stderr:\n%s", code, exitcode.Decode, stderr.String())
	}
	if !strings.HasPrefix(stderr.String(), "etcdpvc: error: ") || !strings.Contains(stderr.String(), "FieldsV1") {
		t.Errorf("stderr:\n%s", stderr.String())
	}
}
