package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// encryptionConfig turns on encryption at rest with a different provider
// for each resource etcdpvc edits. identity comes last so that values
// written before it was turned on stay readable. The keys are test keys
// and protect nothing.
const encryptionConfig = `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [secrets]
    providers:
      - aescbc:
          keys:
            - name: key1
              secret: mu431ywsQGiaO2+8R+7+s6rm1lJufEqhapSCFQg/gl0=
      - identity: {}
  - resources: [configmaps]
    providers:
      - aesgcm:
          keys:
            - name: key1
              secret: kNoVUFpQKTWDlG9CzMG5Ov9fsph551b3kUbZ3dSBV5g=
      - identity: {}
  - resources: [persistentvolumeclaims]
    providers:
      - secretbox:
          keys:
            - name: key1
              secret: bM8N6eHCeVuWwCMoTLFadmPfljBiXbFK8rR8Bffuvgc=
      - identity: {}
`

const (
	aescbcPrefix    = "k8s:enc:aescbc:v1:key1:"
	aesgcmPrefix    = "k8s:enc:aesgcm:v1:key1:"
	secretboxPrefix = "k8s:enc:secretbox:v1:key1:"
	protobufPrefix  = "k8s\\x00 (protobuf)"
)

// TestEncryptedResources restarts the apiserver with encryption at rest,
// edits encrypted objects through etcdpvc --encryption-config, and checks
// that the apiserver reads them and that they are stored encrypted with
// the provider the config names.
func TestEncryptedResources(t *testing.T) {
	c := startCluster(t, "encryption", ClusterOptions{})
	c.EnsureNamespace(t, "demo")
	ctx := context.Background()
	const ns = "demo"
	pvcKey := func(name string) string { return "/registry/persistentvolumeclaims/demo/" + name }

	// www-web-1 is written before encryption is turned on.
	if _, err := c.Client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, newPVC("www-web-1", "local-disks", "5Gi"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pvc: %v", err)
	}
	plain := c.etcdGet(t, pvcKey("www-web-1"))
	if p := storedPrefix(plain.Value); p != protobufPrefix {
		t.Fatalf("before encryption the pvc is stored as %s, want %s", p, protobufPrefix)
	}
	c.capture(t, "encrypted", "before-encryption", plain)

	cfg := filepath.Join(c.Dir, "encryption-config.yaml")
	if err := os.WriteFile(cfg, []byte(encryptionConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	captureFile(t, "encrypted", "encryption-config.yaml", cfg)
	if err := c.RestartAPIServer(ClusterOptions{EncryptionConfig: cfg}); err != nil {
		t.Fatalf("restart kube-apiserver with encryption at rest: %v", err)
	}

	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "creds", Labels: map[string]string{"app": "web"}},
		Data:       map[string][]byte{"password": []byte("s3cr3t-test-value")},
	}
	if _, err := c.Client.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create secret: %v", err)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "web-config", Labels: map[string]string{"app": "web"}},
		Data:       map[string]string{"settings.yaml": "replicas: 3\n"},
	}
	if _, err := c.Client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create configmap: %v", err)
	}
	terminatingPVC(t, c, ns, "www-web-0")
	// Deleting www-web-1 rewrites it, now encrypted.
	if err := c.Client.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, "www-web-1", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete pvc www-web-1: %v", err)
	}

	pvcServed := func(name string) func(context.Context) (string, metav1.Object, error) {
		return func(ctx context.Context) (string, metav1.Object, error) {
			p, err := c.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return "", nil, err
			}
			if p.DeletionTimestamp != nil {
				return "", nil, fmt.Errorf("still Terminating (deletionTimestamp %v)", p.DeletionTimestamp)
			}
			if !slices.Equal(p.Finalizers, []string{pvcProtection}) {
				return "", nil, fmt.Errorf("finalizers %v, want [%s]", p.Finalizers, pvcProtection)
			}
			return p.Spec.Resources.Requests.Storage().String(), p, nil
		}
	}
	tests := []struct {
		name   string
		key    string
		prefix string
		args   []string
		// served reads the object through the apiserver and returns a
		// value the edit must leave intact, or an error while the edit is
		// not visible yet.
		served func(context.Context) (string, metav1.Object, error)
		want   string
	}{
		{
			name: "undelete pvc created encrypted", key: pvcKey("www-web-0"), prefix: secretboxPrefix,
			args:   []string{"undelete", "pvc", "www-web-0", "-n", ns},
			served: pvcServed("www-web-0"), want: "5Gi",
		},
		{
			name: "undelete pvc created before encryption", key: pvcKey("www-web-1"), prefix: secretboxPrefix,
			args:   []string{"undelete", "pvc", "www-web-1", "-n", ns},
			served: pvcServed("www-web-1"), want: "5Gi",
		},
		{
			name: "label secret", key: "/registry/secrets/demo/creds", prefix: aescbcPrefix,
			args: []string{"label", "secret", "creds", "-n", ns, "rotated=2026-11"},
			served: func(ctx context.Context) (string, metav1.Object, error) {
				s, err := c.Client.CoreV1().Secrets(ns).Get(ctx, "creds", metav1.GetOptions{})
				if err != nil {
					return "", nil, err
				}
				if s.Labels["rotated"] != "2026-11" || s.Labels["app"] != "web" {
					return "", nil, fmt.Errorf("labels %v, want app=web and rotated=2026-11", s.Labels)
				}
				return string(s.Data["password"]), s, nil
			},
			want: "s3cr3t-test-value",
		},
		{
			name: "label configmap", key: "/registry/configmaps/demo/web-config", prefix: aesgcmPrefix,
			args: []string{"label", "configmap", "web-config", "-n", ns, "rotated=2026-11"},
			served: func(ctx context.Context) (string, metav1.Object, error) {
				m, err := c.Client.CoreV1().ConfigMaps(ns).Get(ctx, "web-config", metav1.GetOptions{})
				if err != nil {
					return "", nil, err
				}
				if m.Labels["rotated"] != "2026-11" {
					return "", nil, fmt.Errorf("labels %v, want rotated=2026-11", m.Labels)
				}
				return m.Data["settings.yaml"], m, nil
			},
			want: "replicas: 3\n",
		},
	}

	// Without the encryption config etcdpvc cannot read the values; it must
	// say so and write nothing.
	for _, tc := range tests {
		before := c.etcdGet(t, tc.key)
		if p := storedPrefix(before.Value); p != tc.prefix {
			t.Fatalf("%s is stored as %s before the edit, want %s", tc.key, p, tc.prefix)
		}
		r := c.etcdpvc(t, slices.Concat(tc.args, []string{"--yes", "--backup-dir", t.TempDir()})...)
		if r.code != 6 {
			t.Errorf("without --encryption-config: want exit status 6 (cannot be decoded):\n%s", r)
		}
		if after := c.etcdGet(t, tc.key); after.ModRevision != before.ModRevision || !bytes.Equal(after.Value, before.Value) {
			t.Errorf("without --encryption-config etcdpvc changed %s (revision %d → %d)", tc.key, before.ModRevision, after.ModRevision)
		}
	}

	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := c.etcdGet(t, tc.key)
			c.capture(t, "encrypted", "before", before)
			args := slices.Concat(tc.args, []string{"--encryption-config", cfg, "--yes", "--backup-dir", t.TempDir()})
			c.mustEtcdpvc(t, args...)
			after := c.etcdGet(t, tc.key)
			if p := storedPrefix(after.Value); p != tc.prefix {
				t.Errorf("etcdpvc stored %s as %s, want %s", tc.key, p, tc.prefix)
			}
			if len(tc.want) >= 8 && bytes.Contains(after.Value, []byte(tc.want)) {
				t.Errorf("the stored value of %s holds %q in clear text", tc.key, tc.want)
			}
			eventually(t, "the apiserver reads the edited "+tc.key, func() error {
				got, obj, err := tc.served(context.Background())
				if err != nil {
					return err
				}
				if obj.GetResourceVersion() != strconv.FormatInt(after.ModRevision, 10) {
					return fmt.Errorf("resourceVersion %s, want %d", obj.GetResourceVersion(), after.ModRevision)
				}
				if got != tc.want {
					return fmt.Errorf("served %q, want %q", got, tc.want)
				}
				return nil
			})
			c.capture(t, "encrypted", "after", after)
		})
	}

	// A config that is not the apiserver's (another key for secrets): the
	// Secret looks unreadable to etcdpvc, but the apiserver serves it, so
	// delete refuses it before writing anything.
	wrong := filepath.Join(c.Dir, "wrong-config.yaml")
	if err := os.WriteFile(wrong, []byte(strings.Replace(encryptionConfig, "name: key1\n              secret: mu431", "name: other\n              secret: mu431", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	key := "/registry/secrets/demo/creds"
	before := c.etcdGet(t, key)
	r := c.etcdpvc(t, "--kubeconfig", c.writeKubeconfig(t), "--encryption-config", wrong, "delete", "secret", "creds", "-n", ns, "--yes", "--backup-dir", t.TempDir())
	if r.code != 5 || !strings.Contains(r.stderr, "the apiserver serves it") || strings.Contains(r.stdout+r.stderr, "s3cr3t") {
		t.Errorf("delete with another config than the apiserver's: want exit status 5, the apiserver serving it:\n%s", r)
	}
	if after := c.etcdGet(t, key); after.ModRevision != before.ModRevision {
		t.Errorf("the refused delete changed %s (revision %d → %d)", key, before.ModRevision, after.ModRevision)
	}
}
