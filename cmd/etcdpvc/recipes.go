package main

import (
	"strings"

	"github.com/urfave/cli/v2"
	apiresource "k8s.io/apimachinery/pkg/api/resource"

	"github.com/etcdpvc/etcdpvc/internal/cliargs"
	"github.com/etcdpvc/etcdpvc/resource"
)

// Recipes: guided compositions of the surgery write path for the seed
// scenarios (docs/runbooks/resize-recover.md and
// docs/runbooks/storage-class-migration.md).

func resizeRecoverCommand() command {
	return command{
		name:      "resize-recover",
		usage:     "recover a claim from a failed volume expansion (clusters before v1.34)",
		argsUsage: "pvc NAME -n NAMESPACE --to SIZE",
		args:      cliargs.Args{Kind: cliargs.ArgsObject, Noun: "claim", Resources: []string{"pvc", "persistentvolumeclaim", "persistentvolumeclaims"}},
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
			return runResizeRecover(e, in.g, in.obj, in.namespace, in.key, to, readWriteOptions(c, e))
		},
	}
}

func runResizeRecover(e *env, g *globalOptions, obj []string, namespace, key string, to apiresource.Quantity, o writeOptions) error {
	return writeObject(e, g, o, obj, namespace, key, func(s *cliSession, ref resource.Ref) error {
		if ref.Resource.Path != "" && ref.Resource.Path != "persistentvolumeclaims" {
			return usagef("resize-recover works on persistentvolumeclaims, not %s", ref.Resource)
		}
		return s.ResizeRecover(e.ctx, e, ref.Key, to, o)
	})
}

func rebindCommand() command {
	return command{
		name:      "rebind",
		usage:     "bind a PersistentVolume to a re-created claim",
		argsUsage: "pv PVNAME --to-claim NAMESPACE/CLAIM",
		args:      cliargs.Args{Kind: cliargs.ArgsObject, Noun: "volume", Bare: true, Resources: []string{"pv", "persistentvolume", "persistentvolumes"}},
		values:    map[string]cliargs.Offer{"to-claim": cliargs.OfferClaims},
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
			return runRebind(e, in.g, in.obj, ns, claim, c.Bool("force"), readWriteOptions(c, e))
		},
	}
}

func runRebind(e *env, g *globalOptions, obj []string, namespace, claim string, force bool, o writeOptions) error {
	return writeObject(e, g, o, obj, "", "", func(s *cliSession, ref resource.Ref) error {
		if ref.Resource.Path != "persistentvolumes" {
			return usagef("rebind works on a persistentvolume, not %s", ref.Resource)
		}
		return s.Rebind(e.ctx, e, ref.Name, namespace, claim, force, o)
	})
}
