package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"

	"github.com/etcdpvc/etcdpvc/surgery"
)

// Recipes: guided compositions of the surgery write path for the seed
// scenarios (docs/runbooks/resize-recover.md and
// docs/runbooks/storage-class-migration.md).

func resizeRecoverCommand() command {
	return command{
		name:      "resize-recover",
		usage:     "recover a claim from a failed volume expansion (clusters before v1.34)",
		argsUsage: "pvc NAME -n NAMESPACE --to SIZE",
		args:      argSpec{kind: argObject, noun: "claim", resources: []string{"pvc", "persistentvolumeclaim", "persistentvolumeclaims"}},
		desc: "resize-recover lowers the storage request of a PersistentVolumeClaim whose expansion failed\n" +
			"(the driver cannot grow the volume to the size asked for, so the resizer retries forever),\n" +
			"as Kubernetes v1.34 lets a user do through the API and older versions refuse. It sets\n" +
			"spec.resources.requests.storage to SIZE; removes storage from status.allocatedResources and\n" +
			"status.allocatedResourceStatuses, and the legacy status.resizeStatus, so the resizer starts\n" +
			"a new expansion to SIZE instead of retrying the failed one; and drops the Resizing,\n" +
			"FileSystemResizePending, ControllerResizeError and NodeResizeError conditions.\n\n" +
			"It checks the v1.34 rules: the claim is Bound, and SIZE is at least status.capacity.storage\n" +
			"(a volume never shrinks; SIZE equal to it cancels the expansion) and less than the failed\n" +
			"request. It then\n" +
			"explains what the external-resizer and the kubelet will do. See\n" +
			"docs/runbooks/resize-recover.md.\n\n" + writeHelp,
		examples: `etcdpvc resize-recover pvc www-web-1 -n demo --to 20Gi --dry-run
etcdpvc resize-recover pvc/www-web-1 -n demo --to 20Gi --yes
etcdpvc --kubeadm resize-recover pvc www-web-1 -n demo --to 20Gi`,
		flags: withWrite(&cli.StringFlag{Name: "to", Usage: "the new storage request (e.g. 20Gi): above status.capacity.storage, below the failed request"}),
		action: func(c *cli.Context, e *env, in *input) error {
			if c.String("to") == "" {
				return usagef("resize-recover needs --to SIZE, the new storage request (e.g. --to 20Gi)")
			}
			to, err := apiresource.ParseQuantity(c.String("to"))
			if err != nil {
				return usagef("--to %q: %v", c.String("to"), err)
			}
			return runResizeRecover(e, in.g, in.obj, in.namespace, in.key, to, readWriteOptions(c))
		},
	}
}

func runResizeRecover(e *env, g *globalOptions, obj []string, namespace, key string, to apiresource.Quantity, o writeOptions) error {
	s, err := openWriteSession(e, g, o)
	if err != nil {
		return err
	}
	defer s.Close()
	ref, err := s.ref(obj, namespace, key)
	if err != nil {
		return err
	}
	if ref.Resource.Path != "" && ref.Resource.Path != "persistentvolumeclaims" {
		return usagef("resize-recover works on persistentvolumeclaims, not %s", ref.Resource)
	}
	plan, err := s.Planner.MakePlan(e.ctx, s.Reader, ref.Key, surgery.ResizeRecover{To: to})
	if err != nil {
		return recipeError(err)
	}
	if err := applyPlan(e, s, plan, o); err != nil {
		return err
	}
	pvc, pv := s.Planner.ResizeSubjects(e.ctx, s.Reader, plan)
	if pvc == nil {
		return nil
	}
	fmt.Fprint(e.stdout, resizeNextSteps(pvc, pv, to, nextStepsWhen(o)))
	return nil
}

// nextStepsWhen says when the controllers will see a recipe's write: now,
// once it is written (--dry-run), or once the cluster runs on the edited
// copy of its db (--out).
func nextStepsWhen(o writeOptions) string {
	switch {
	case o.DryRun:
		return "Once written"
	case o.Out != "":
		return "Once the cluster runs on " + o.Out + ","
	default:
		return "Now"
	}
}

// resizeNextSteps explains what the controllers do after resize-recover.
func resizeNextSteps(pvc *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume, to apiresource.Quantity, when string) string {
	capacity := pvc.Status.Capacity[corev1.ResourceStorage]
	request := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	var b strings.Builder
	fmt.Fprintf(&b, "\n%s the claim asks for %s instead of %s, with no allocation recorded:\n", when, to.String(), request.String())
	if pv != nil {
		if have, ok := pv.Spec.Capacity[corev1.ResourceStorage]; ok && have.Cmp(to) >= 0 {
			fmt.Fprintf(&b, "  - PersistentVolume %s already has capacity %s: the controller side of the failed expansion went\n"+
				"    through. The resizer finds the volume large enough and only a filesystem resize is left; the\n"+
				"    claim will report %s, not %s. Nothing ever shrinks a volume.\n", pv.Name, have.String(), have.String(), to.String())
		}
	}
	fmt.Fprintf(&b, "  - the external-resizer (the CSI driver's csi-resizer sidecar; kube-controller-manager's expand\n"+
		"    controller for in-tree volumes) sees a request above the capacity %s and starts a new\n"+
		"    expansion to %s, setting the Resizing condition while the driver works;\n", capacity.String(), to.String())
	b.WriteString("  - if the volume also needs its filesystem grown, the resizer sets FileSystemResizePending and the\n" +
		"    kubelet of the node where a pod mounts the claim grows it (online, or when a pod next mounts\n" +
		"    it); status.capacity then becomes the new size and the conditions clear;\n")
	fmt.Fprintf(&b, "  - if the expansion to %s fails too, ControllerResizeError or NodeResizeError comes back: read the\n"+
		"    events with `kubectl describe pvc %s -n %s` and pick a size the storage can give.\n", to.String(), pvc.Name, pvc.Namespace)
	return b.String()
}

func rebindCommand() command {
	return command{
		name:      "rebind",
		usage:     "bind a PersistentVolume to a re-created claim",
		argsUsage: "pv PVNAME --to-claim NAMESPACE/CLAIM",
		args:      argSpec{kind: argObject, noun: "volume", bare: true, resources: []string{"pv", "persistentvolume", "persistentvolumes"}},
		values:    map[string]completer{"to-claim": offerClaims},
		desc: "rebind points a PersistentVolume's spec.claimRef at a claim (kind, apiVersion, namespace,\n" +
			"name and the claim's current uid; no resourceVersion) and sets the claim's spec.volumeName to\n" +
			"the volume, so the volume binder binds the two: the last step of re-creating a claim over a\n" +
			"retained volume (a storage class migration, a claim deleted by mistake). spec.volumeName is\n" +
			"immutable through the API once the claim exists.\n\n" +
			"It refuses when the volume is bound to another live claim, when the claim is bound to another\n" +
			"volume that names it, or when either is being deleted, unless --force; it warns when the binder\n" +
			"would refuse the pair (storage class, size, access modes, volume mode). Both diffs are shown and\n" +
			"confirmed once; the volume is written first, then the claim, each with its own backup and\n" +
			"compare-and-swap. If the second write fails, it says what was written and how to undo it. See\n" +
			"docs/runbooks/storage-class-migration.md.\n\n" + writeHelp,
		examples: `etcdpvc rebind pv pv-www-web-1 --to-claim demo/www-web-1 --dry-run
etcdpvc rebind pv/pv-www-web-1 --to-claim demo/www-web-1 --yes
etcdpvc --kubeadm rebind pv pv-www-web-1 --to-claim demo/www-web-1`,
		flags: append(writeFlags(),
			&cli.StringFlag{Name: "to-claim", Usage: "the claim to bind the volume to, as NAMESPACE/NAME"},
			&cli.BoolFlag{Name: "force", Usage: "rebind even though the volume or the claim is bound elsewhere or being deleted"},
		),
		action: func(c *cli.Context, e *env, in *input) error {
			ns, claim, ok := strings.Cut(c.String("to-claim"), "/")
			if !ok || ns == "" || claim == "" || strings.Contains(claim, "/") {
				return usagef("rebind needs --to-claim NAMESPACE/NAME, the claim to bind the volume to")
			}
			return runRebind(e, in.g, in.obj, ns, claim, c.Bool("force"), readWriteOptions(c))
		},
	}
}

func runRebind(e *env, g *globalOptions, obj []string, namespace, claim string, force bool, o writeOptions) error {
	s, err := openWriteSession(e, g, o)
	if err != nil {
		return err
	}
	defer s.Close()
	s.Planner.ShowSecrets = o.ShowSecrets
	ref, err := s.ref(obj, "", "")
	if err != nil {
		return err
	}
	if ref.Resource.Path != "persistentvolumes" {
		return usagef("rebind works on a persistentvolume, not %s", ref.Resource)
	}
	rb, err := s.Planner.PlanRebind(e.ctx, s.Reader, ref.Name, namespace, claim, force)
	if err != nil {
		return recipeError(err)
	}
	for _, w := range rb.Warnings {
		e.warn(w)
	}
	steps, err := writePlans(e, s, rb.Plans(), o)
	if err != nil {
		if errors.Is(err, surgery.ErrPartial) {
			return rebindPartial(e, rb, steps, err)
		}
		return err
	}
	written := 0
	for _, st := range steps {
		if st.Written() {
			written++
		}
	}
	if o.DryRun || written == 0 {
		return nil
	}
	fmt.Fprintf(e.stdout, "\n%s the volume's claimRef and the claim's volumeName name each other: the\n"+
		"PersistentVolume controller in kube-controller-manager binds them (status.phase Bound on both,\n"+
		"annotation pv.kubernetes.io/bind-completed on the claim) at its next sync; check with\n"+
		"`kubectl get pvc %s -n %s` and `kubectl get pv %s`. Pods waiting for the claim then start.\n", nextStepsWhen(o), claim, namespace, ref.Name)
	return nil
}

// rebindPartial reports a rebind whose volume was written and whose claim
// was not (or may not have been).
func rebindPartial(e *env, rb *surgery.Rebind, steps []surgery.Step, err error) error {
	vol, ok := rb.VolumeWritten(steps)
	if !ok {
		return err
	}
	claim := "was NOT written"
	if errors.Is(err, surgery.ErrUncertain) {
		claim = "may or may not have been written"
	}
	fmt.Fprintf(e.stderr, "etcdpvc: the rebind is half done: %s was written, %s %s.\n", rb.Volume.ObjectName(), rb.Claim.ObjectName(), claim)
	fmt.Fprintf(e.stderr, "etcdpvc: the volume's claimRef now names the claim, but the claim's spec.volumeName may not name the volume;\n"+
		"etcdpvc: the binder may still bind a Pending claim to a volume reserved for it, or leave the volume Available.\n")
	return withHint(fmt.Errorf("rebind: %w", err),
		"finish by running the same rebind again (it plans only what is left), or undo the volume's write with: "+vol.Undo)
}

// recipeError turns a recipe's refusal into the CLI's refused error (exit
// status 5).
func recipeError(err error) error {
	if errors.Is(err, surgery.ErrRefused) {
		return &refusedError{msg: strings.TrimSuffix(err.Error(), ": "+surgery.ErrRefused.Error()) + "; nothing written"}
	}
	return err
}
