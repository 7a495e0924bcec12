package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// immutableCase is one object whose immutable field etcdpvc changes.
type immutableCase struct {
	name   string
	key    string
	create func(ctx context.Context, cs kubernetes.Interface) error
	// apiChange makes, through the API, the change the patch makes; the
	// apiserver must refuse it as Invalid.
	apiChange func(ctx context.Context, cs kubernetes.Interface) error
	args      []string // the etcdpvc command; -n, --yes and --backup-dir are added
	env       []string // extra environment for etcdpvc
	// served returns the patched field(s) as the apiserver serves them,
	// with the object's resourceVersion.
	served func(ctx context.Context, cs kubernetes.Interface) (value, resourceVersion string, err error)
	want   string
	// apiUpdate makes an ordinary API Update of the object afterwards and
	// returns the patched field(s) from the apiserver's answer.
	apiUpdate func(ctx context.Context, cs kubernetes.Interface) (string, error)
}

// TestImmutableFields changes, with etcdpvc patch and edit, fields the API
// forbids changing, and checks that the apiserver serves the new values and
// that the stored object stays valid: an ordinary API Update afterwards
// succeeds and keeps them.
func TestImmutableFields(t *testing.T) {
	c := sharedCluster(t)
	c.EnsureNamespace(t, "demo")
	const ns = "demo"

	pvcClass := func(ctx context.Context, cs kubernetes.Interface) (string, string, error) {
		p, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data-db-0", metav1.GetOptions{})
		if err != nil {
			return "", "", err
		}
		return deref(p.Spec.StorageClassName), p.ResourceVersion, nil
	}
	pvcMode := func(ctx context.Context, cs kubernetes.Interface) (string, string, error) {
		p, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data-db-1", metav1.GetOptions{})
		if err != nil {
			return "", "", err
		}
		if p.Spec.VolumeMode == nil {
			return "<nil>", p.ResourceVersion, nil
		}
		return string(*p.Spec.VolumeMode), p.ResourceVersion, nil
	}
	stsTemplate := func(s *appsv1.StatefulSet) string {
		if len(s.Spec.VolumeClaimTemplates) != 1 {
			return fmt.Sprintf("%d volumeClaimTemplates", len(s.Spec.VolumeClaimTemplates))
		}
		spec := s.Spec.VolumeClaimTemplates[0].Spec
		size := spec.Resources.Requests[corev1.ResourceStorage]
		return deref(spec.StorageClassName) + " " + size.String()
	}

	tests := []immutableCase{
		{
			name: "patch pvc storageClassName",
			key:  "/registry/persistentvolumeclaims/demo/data-db-0",
			create: func(ctx context.Context, cs kubernetes.Interface) error {
				_, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, newPVC("data-db-0", "slow", "5Gi"), metav1.CreateOptions{})
				return err
			},
			apiChange: func(ctx context.Context, cs kubernetes.Interface) error {
				p, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data-db-0", metav1.GetOptions{})
				if err != nil {
					return err
				}
				p.Spec.StorageClassName = ptr("fast")
				_, err = cs.CoreV1().PersistentVolumeClaims(ns).Update(ctx, p, metav1.UpdateOptions{})
				return err
			},
			args:   []string{"patch", "pvc", "data-db-0", "-p", `{"spec":{"storageClassName":"fast"}}`},
			served: pvcClass,
			want:   "fast",
			apiUpdate: func(ctx context.Context, cs kubernetes.Interface) (string, error) {
				p, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data-db-0", metav1.GetOptions{})
				if err != nil {
					return "", err
				}
				p.Labels["touched"] = "by-api"
				p, err = cs.CoreV1().PersistentVolumeClaims(ns).Update(ctx, p, metav1.UpdateOptions{})
				if err != nil {
					return "", err
				}
				return deref(p.Spec.StorageClassName), nil
			},
		},
		{
			name: "patch statefulset volumeClaimTemplates",
			key:  "/registry/statefulsets/demo/web",
			create: func(ctx context.Context, cs kubernetes.Interface) error {
				_, err := cs.AppsV1().StatefulSets(ns).Create(ctx, newStatefulSet("web"), metav1.CreateOptions{})
				return err
			},
			apiChange: func(ctx context.Context, cs kubernetes.Interface) error {
				s, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
				if err != nil {
					return err
				}
				s.Spec.VolumeClaimTemplates[0].Spec.StorageClassName = ptr("fast")
				_, err = cs.AppsV1().StatefulSets(ns).Update(ctx, s, metav1.UpdateOptions{})
				return err
			},
			args: []string{"patch", "sts", "web", "--type", "json", "-p", `[` +
				`{"op":"replace","path":"/spec/volumeClaimTemplates/0/spec/storageClassName","value":"fast"},` +
				`{"op":"replace","path":"/spec/volumeClaimTemplates/0/spec/resources/requests/storage","value":"10Gi"}]`},
			served: func(ctx context.Context, cs kubernetes.Interface) (string, string, error) {
				s, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
				if err != nil {
					return "", "", err
				}
				return stsTemplate(s), s.ResourceVersion, nil
			},
			want: "fast 10Gi",
			apiUpdate: func(ctx context.Context, cs kubernetes.Interface) (string, error) {
				s, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
				if err != nil {
					return "", err
				}
				s.Spec.Replicas = ptr(int32(2))
				s, err = cs.AppsV1().StatefulSets(ns).Update(ctx, s, metav1.UpdateOptions{})
				if err != nil {
					return "", err
				}
				if s.Spec.Replicas == nil || *s.Spec.Replicas != 2 {
					return "", fmt.Errorf("the update's answer has replicas %v, want 2", s.Spec.Replicas)
				}
				return stsTemplate(s), nil
			},
		},
		{
			name: "edit pvc volumeMode",
			key:  "/registry/persistentvolumeclaims/demo/data-db-1",
			create: func(ctx context.Context, cs kubernetes.Interface) error {
				_, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, newPVC("data-db-1", "local-disks", "5Gi"), metav1.CreateOptions{})
				return err
			},
			apiChange: func(ctx context.Context, cs kubernetes.Interface) error {
				p, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data-db-1", metav1.GetOptions{})
				if err != nil {
					return err
				}
				p.Spec.VolumeMode = ptr(corev1.PersistentVolumeBlock)
				_, err = cs.CoreV1().PersistentVolumeClaims(ns).Update(ctx, p, metav1.UpdateOptions{})
				return err
			},
			// The editor is a script, as an operator's $EDITOR is a program.
			args:   []string{"edit", "pvc", "data-db-1"},
			env:    []string{"EDITOR=sed -i -e 's/volumeMode: Filesystem/volumeMode: Block/'"},
			served: pvcMode,
			want:   "Block",
			apiUpdate: func(ctx context.Context, cs kubernetes.Interface) (string, error) {
				p, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data-db-1", metav1.GetOptions{})
				if err != nil {
					return "", err
				}
				p.Annotations = map[string]string{"touched": "by-api"}
				p, err = cs.CoreV1().PersistentVolumeClaims(ns).Update(ctx, p, metav1.UpdateOptions{})
				if err != nil {
					return "", err
				}
				return string(*p.Spec.VolumeMode), nil
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if err := tc.create(ctx, c.Client); err != nil {
				t.Fatalf("create: %v", err)
			}
			if err := tc.apiChange(ctx, c.Client); !apierrors.IsInvalid(err) {
				t.Fatalf("the apiserver should refuse this change through the API as Invalid, got: %v", err)
			}
			before := c.etcdGet(t, tc.key)
			c.capture(t, "plain", "created", before)

			args := slices.Concat(tc.args, []string{"-n", ns, "--yes", "--backup-dir", t.TempDir()})
			if r := c.etcdpvcEnv(t, tc.env, args...); r.code != 0 {
				t.Fatalf("want exit status 0:\n%s", r)
			}
			after := c.etcdGet(t, tc.key)
			if after.ModRevision <= before.ModRevision {
				t.Fatalf("etcd's mod revision did not advance: %d → %d", before.ModRevision, after.ModRevision)
			}
			if after.Lease != before.Lease || after.CreateRevision != before.CreateRevision {
				t.Errorf("lease or create revision changed: lease %d → %d, create revision %d → %d", before.Lease, after.Lease, before.CreateRevision, after.CreateRevision)
			}
			eventually(t, "the apiserver serves the patched value", func() error {
				got, gotRV, err := tc.served(ctx, c.Client)
				if err != nil {
					return err
				}
				if gotRV != strconv.FormatInt(after.ModRevision, 10) {
					return fmt.Errorf("resourceVersion %s, want %d", gotRV, after.ModRevision)
				}
				if got != tc.want {
					return fmt.Errorf("served %q, want %q", got, tc.want)
				}
				return nil
			})
			c.capture(t, "plain", tc.args[0]+"ed", after) // patched or edited

			got, err := tc.apiUpdate(ctx, c.Client)
			if err != nil {
				t.Fatalf("an API Update of the patched object failed: the stored object is not valid: %v", err)
			}
			if got != tc.want {
				t.Errorf("after an API Update the apiserver answers %q, want %q (it must keep the patched value)", got, tc.want)
			}
		})
	}
}

func newStatefulSet(name string) *appsv1.StatefulSet {
	labels := map[string]string{"app": name}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr(int32(1)),
			ServiceName: name,
			Selector:    &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name:         "web",
					Image:        "registry.k8s.io/pause:3.10",
					VolumeMounts: []corev1.VolumeMount{{Name: "www", MountPath: "/usr/share/www"}},
				}}},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "www"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					StorageClassName: ptr("local-disks"),
					Resources: corev1.VolumeResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("5Gi")},
					},
				},
			}},
		},
	}
}

func ptr[T any](v T) *T { return &v }

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
