package surgery

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/etcdpvc/etcdpvc/resource"
	"github.com/etcdpvc/etcdpvc/store"
)

// demoSet are the corpus objects of namespace demo, keyed by etcd key.
var demoSet = map[string]string{
	nsKey:                                  nsFile,
	"/registry/configmaps/demo/web-config": "configmaps__demo__web-config",
	"/registry/deployments/demo/api":       "deployments__demo__api",
	evKey:                                  evFile,
	"/registry/leases/demo/demo-lock":      "leases__demo__demo-lock",
	"/registry/persistentvolumeclaims/demo/www-web-1": pvcBound,
	"/registry/pods/demo/web-0":                       "pods__demo__web-0",
	secKey:                                            secFile,
	"/registry/serviceaccounts/demo/default":          "serviceaccounts__demo__default",
	"/registry/services/specs/demo/nginx":             "services__demo__nginx",
	stsKey:                                            stsFile,
	crKey:                                             crFile,
}

const crdKey = "/registry/apiextensions.k8s.io/customresourcedefinitions/widgets.e2e.example.com"

// seedDemo writes namespace demo, the widgets CRD (when withCRD) and an
// object of another namespace, then deletes demo's keys and the CRD. It
// returns the revision before the deletion.
func seedDemo(t *testing.T, s *store.Etcd, withCRD bool) int64 {
	t.Helper()
	for k, f := range demoSet {
		create(t, s, k, corpus(t, f))
	}
	if withCRD {
		create(t, s, crdKey, corpus(t, "customresourcedefinitions__-__widgets.e2e.example.com"))
	}
	create(t, s, "/registry/services/specs/default/kubernetes", corpus(t, "services__default__kubernetes"))
	info, err := s.Info(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	for k := range demoSet {
		if _, err := s.Client().Delete(testCtx(t), k); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Client().Delete(testCtx(t), crdKey); err != nil {
		t.Fatal(err)
	}
	return info.Revision
}

func planActions(p *SetPlan) map[string]SetAction {
	out := map[string]SetAction{}
	for _, it := range p.Items {
		out[it.Key] = it.Action
	}
	return out
}

func TestRecoverNamespacePlanAndWrite(t *testing.T) {
	_, s := startEtcd(t)
	rev := seedDemo(t, s, true)
	ctx := testCtx(t)
	var c Planner
	plan, err := c.PlanRecoverSet(ctx, s, s, RecoverSetOptions{Namespace: "demo", Rev: rev})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]SetAction{
		nsKey: ActionCreate, crdKey: ActionCreate,
		"/registry/configmaps/demo/web-config":            ActionCreate,
		"/registry/deployments/demo/api":                  ActionCreate,
		evKey:                                             ActionSkipped,
		"/registry/leases/demo/demo-lock":                 ActionSkipped,
		"/registry/persistentvolumeclaims/demo/www-web-1": ActionCreate,
		"/registry/pods/demo/web-0":                       ActionSkipped,
		secKey:                                            ActionCreate,
		"/registry/serviceaccounts/demo/default":          ActionCreate,
		"/registry/services/specs/demo/nginx":             ActionCreate,
		stsKey:                                            ActionCreate,
		crKey:                                             ActionCreate,
	}
	got := planActions(plan)
	for k, a := range want {
		if got[k] != a {
			t.Errorf("%s: action %q, want %q", k, got[k], a)
		}
	}
	if len(got) != len(want) {
		t.Errorf("plan has %d items, want %d: %v", len(got), len(want), got)
	}
	// Order: namespace, CRD, ServiceAccounts, Secrets, ConfigMaps, RBAC,
	// claims, the rest.
	var order []string
	for _, it := range plan.Items {
		if it.Action == ActionCreate {
			order = append(order, it.Key)
		}
	}
	wantOrder := []string{nsKey, crdKey, "/registry/serviceaccounts/demo/default", secKey, "/registry/configmaps/demo/web-config", "/registry/persistentvolumeclaims/demo/www-web-1"}
	for i, k := range wantOrder {
		if order[i] != k {
			t.Fatalf("write order %v; want it to start with %v", order, wantOrder)
		}
	}
	for _, it := range plan.Items {
		if it.Key == "/registry/pods/demo/web-0" && !strings.Contains(it.Reason, "owned by StatefulSet web") {
			t.Errorf("pod skip reason %q", it.Reason)
		}
		if it.Key == "/registry/persistentvolumeclaims/demo/www-web-1" && (len(it.Warnings) != 1 || !strings.Contains(it.Warnings[0], "gone from the live cluster")) {
			t.Errorf("claim warnings %q", it.Warnings)
		}
	}

	// Two keys per transaction: five transactions, each all or nothing.
	res, err := WriteRecoverSet(ctx, s, plan, RecoverSetWriteOptions{ApplyOptions: ApplyOptions{BackupDir: t.TempDir()}, MaxTxnOps: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Written) != 10 {
		t.Fatalf("written %d, want 10", len(res.Written))
	}
	revs := map[int64]int{}
	for _, w := range res.Written {
		revs[w.Revision]++
		kv, err := s.Get(ctx, w.Item.Key, 0)
		if err != nil {
			t.Fatalf("%s: %v", w.Item.Key, err)
		}
		if kv.ModRevision != w.Revision || kv.Version != 1 {
			t.Errorf("%s: revision %d version %d, want %d 1", w.Item.Key, kv.ModRevision, kv.Version, w.Revision)
		}
		b, err := ReadBackup(w.BackupPath)
		if err != nil || !b.Absent || b.Key != w.Item.Key {
			t.Errorf("backup %s: %+v %v", w.BackupPath, b, err)
		}
	}
	if len(revs) != 5 {
		t.Errorf("revisions %v: want 5 transactions of 2 keys", revs)
	}
	for _, k := range []string{evKey, "/registry/pods/demo/web-0", "/registry/leases/demo/demo-lock"} {
		if _, err := s.Get(ctx, k, 0); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s was recreated: %v", k, err)
		}
	}

	// A second run writes nothing: everything exists identical.
	again, err := c.PlanRecoverSet(ctx, s, s, RecoverSetOptions{Namespace: "demo", Rev: rev})
	if err != nil {
		t.Fatal(err)
	}
	if n := again.Count(ActionIdentical); n != 9 || again.Count(ActionCreate) != 0 {
		t.Errorf("second plan: %v", planActions(again))
	}
}

func TestRecoverSetMissingCRD(t *testing.T) {
	_, s := startEtcd(t)
	rev := seedDemo(t, s, false)
	_, err := Planner{}.PlanRecoverSet(testCtx(t), s, s, RecoverSetOptions{Namespace: "demo", Rev: rev})
	if !errors.Is(err, ErrMissingCRD) || !strings.Contains(err.Error(), "widgets.e2e.example.com") {
		t.Fatalf("err %v, want ErrMissingCRD naming widgets.e2e.example.com", err)
	}
	// Excluding the custom resources makes the rest recoverable.
	widgets, _ := resource.Lookup("widgets.e2e.example.com")
	widgets.Namespaced = true
	p, err := Planner{}.PlanRecoverSet(testCtx(t), s, s, RecoverSetOptions{Namespace: "demo", Rev: rev, Exclude: []resource.Resource{widgets}})
	if err != nil {
		t.Fatal(err)
	}
	if a := planActions(p)[crKey]; a != ActionSkipped {
		t.Errorf("custom resource: %q, want skipped", a)
	}
}

func TestRecoverSetExistingAndResume(t *testing.T) {
	_, s := startEtcd(t)
	rev := seedDemo(t, s, true)
	ctx := testCtx(t)
	var c Planner
	// The ConfigMap exists again with the same value.
	cm := "/registry/configmaps/demo/web-config"
	create(t, s, cm, corpus(t, "configmaps__demo__web-config"))
	if _, err := s.Client().Put(ctx, cm, string(corpus(t, "configmaps__demo__web-config"))); err != nil {
		t.Fatal(err)
	}
	plan, err := c.PlanRecoverSet(ctx, s, s, RecoverSetOptions{Namespace: "demo", Rev: rev})
	if err != nil {
		t.Fatal(err)
	}
	if a := planActions(plan)[cm]; a != ActionIdentical {
		t.Fatalf("configmap: %q, want identical", a)
	}
	// Someone creates the Deployment between the plan and the write: the
	// transaction holding it fails whole, and the error is partial.
	dep := "/registry/deployments/demo/api"
	create(t, s, dep, []byte("not the recovered value"))
	_, err = WriteRecoverSet(ctx, s, plan, RecoverSetWriteOptions{ApplyOptions: ApplyOptions{BackupDir: t.TempDir()}, MaxTxnOps: 3})
	var pe *SetPartialError
	if !errors.As(err, &pe) || !errors.Is(err, ErrPartial) || !errors.Is(err, store.ErrConflict) {
		t.Fatalf("err %v, want a partial conflict", err)
	}
	if pe.Written != 3 {
		t.Errorf("written %d before the failure, want 3 (the transaction of the namespace, the CRD and the ServiceAccount)", pe.Written)
	}
	// Resume: what was written is identical, the Deployment different.
	again, err := c.PlanRecoverSet(ctx, s, s, RecoverSetOptions{Namespace: "demo", Rev: rev})
	if err != nil {
		t.Fatal(err)
	}
	acts := planActions(again)
	if acts[dep] != ActionDifferent || acts[nsKey] != ActionIdentical {
		t.Fatalf("resume plan: %v", acts)
	}
	res, err := WriteRecoverSet(ctx, s, again, RecoverSetWriteOptions{ApplyOptions: ApplyOptions{BackupDir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(res.Written); got != again.Count(ActionCreate) || got == 0 {
		t.Errorf("resume wrote %d", got)
	}
	kv, _ := s.Get(ctx, dep, 0)
	if string(kv.Value) != "not the recovered value" {
		t.Error("an existing different object was overwritten")
	}
	// --replace-different overwrites it, with a compare-and-swap; not
	// when the live value cannot be read and compared.
	if _, err := s.Client().Put(ctx, dep, string(corpus(t, "statefulsets__demo__web"))); err != nil {
		t.Fatal(err)
	}
	rp, err := c.PlanRecoverSet(ctx, s, s, RecoverSetOptions{Namespace: "demo", Rev: rev, ReplaceDifferent: true})
	if err != nil {
		t.Fatal(err)
	}
	if a := planActions(rp)[dep]; a != ActionReplace {
		t.Fatalf("deployment: %q, want replace", a)
	}
	if _, err := WriteRecoverSet(ctx, s, rp, RecoverSetWriteOptions{ApplyOptions: ApplyOptions{BackupDir: t.TempDir()}}); err != nil {
		t.Fatal(err)
	}
	kv, _ = s.Get(ctx, dep, 0)
	if string(kv.Value) != string(corpus(t, "deployments__demo__api")) {
		t.Error("replace did not write the source value")
	}
}

func TestRecoverSetSelection(t *testing.T) {
	_, s := startEtcd(t)
	rev := seedDemo(t, s, true)
	ctx := testCtx(t)
	svc, _ := resource.Lookup("services")
	sel, _ := labels.Parse("app=nginx")
	tests := []struct {
		name string
		o    RecoverSetOptions
		want map[string]SetAction
	}{
		{"all services", RecoverSetOptions{Resource: &svc, InNamespace: "demo", Rev: rev},
			map[string]SetAction{"/registry/services/specs/demo/nginx": ActionCreate}},
		{"all namespaces", RecoverSetOptions{Resource: &svc, Rev: rev},
			map[string]SetAction{"/registry/services/specs/demo/nginx": ActionCreate, "/registry/services/specs/default/kubernetes": ActionIdentical}},
		{"selector", RecoverSetOptions{Resource: &svc, InNamespace: "demo", Selector: sel, Rev: rev},
			map[string]SetAction{"/registry/services/specs/demo/nginx": ActionCreate}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Planner{}.PlanRecoverSet(ctx, s, s, tt.o)
			if err != nil {
				t.Fatal(err)
			}
			got := planActions(p)
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for k, a := range tt.want {
				if got[k] != a {
					t.Errorf("%s: %q, want %q", k, got[k], a)
				}
			}
		})
	}
	none, _ := labels.Parse("app=none")
	p, err := Planner{}.PlanRecoverSet(ctx, s, s, RecoverSetOptions{Resource: &svc, InNamespace: "demo", Selector: none, Rev: rev})
	if err != nil || len(p.Items) != 0 {
		t.Fatalf("selector matching nothing: %v %v", p, err)
	}
}
