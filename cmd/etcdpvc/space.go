package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"
	apiresource "k8s.io/apimachinery/pkg/api/resource"

	"github.com/etcdpvc/etcdpvc/flows"
	"github.com/etcdpvc/etcdpvc/inspect"
	"github.com/etcdpvc/etcdpvc/internal/cliargs"
	"github.com/etcdpvc/etcdpvc/kubeadm"
)

func spaceCommand() command {
	return command{
		name:  "space",
		usage: "why etcd is full (\"database space exceeded\") and the plan that frees it; --reclaim carries it out",
		desc: "space sizes every member of the cluster (etcd's member list, each member's status at its\n" +
			"client URL, the alarm list), or a db file with --db: the db size, the size in use, the part\n" +
			"of the quota used, the alarms, the leader, the revision and the compaction revision. The\n" +
			"quota is --quota; else, with --kubeadm, the etcd manifest's --quota-backend-bytes; else\n" +
			"etcd's default (2Gi), and the output says so. Then why it is full, in numbers: what a\n" +
			"compaction at the current revision would free (the pages in use less the live data's\n" +
			"estimate; with --db also the old revisions held and their bytes), what a defragmentation\n" +
			"would return now (db size − in use), and the live data, read as `stats --by\n" +
			"resource,namespace` reads it: the largest groups, the Events and their leases, the Helm\n" +
			"releases that keep more than Helm's default 10 revisions, the largest objects (one near\n" +
			"etcd's request limit is named), and with --db (or --since REV) the hottest keys. It ends\n" +
			"with the plan: compact, defragment the members (followers first, the leader last), disarm\n" +
			"the NOSPACE alarm, each with the size expected after it, and whether that gets every member\n" +
			"under the quota less --margin. When the live data alone is over it, the plan says so, how\n" +
			"much has to be deleted and the largest groups that make it up (for Events, the command\n" +
			"that deletes them by age). A defragmentation is planned only when it would return a tenth\n" +
			"of the file or more. The sizes after a step are estimates (docs/stats-schema.md).\n" +
			"\n" +
			"--reclaim carries the plan out on live etcd after one confirmation (--yes: without asking):\n" +
			"it compacts at the current revision (less --keep REVISIONS), waiting until the member\n" +
			"asked has removed the history; defragments the members one at a time, followers first and\n" +
			"the leader last, each only after it has applied what the leader committed (so the\n" +
			"compaction too) and the one before answers again, and the member whose data directory the\n" +
			"etcd manifest names (--kubeadm) only when its file system has room for the defragmented\n" +
			"db; and disarms the NOSPACE alarm only when every member is under the quota less the\n" +
			"margin, as measured once defragmented, whatever the plan estimated (else it refuses, exit\n" +
			"status 5, and says what is over). It prints each step as it is done and each member's\n" +
			"size before and after. Ctrl-C stops it between steps (a defragmentation etcd began\n" +
			"finishes on its own) and the output says which steps were done, exit status 10; the\n" +
			"cluster keeps working. It does not delete live data.\n" +
			"\n" +
			"Exit status: 0 when the report is written (and, with --reclaim, the plan carried out); 5\n" +
			"when --reclaim refuses or is not confirmed; 10 when a member did not answer, values could\n" +
			"not be read, or --reclaim stopped part way; 7 when etcd cannot be reached.",
		examples: `etcdpvc --kubeadm space
etcdpvc --db snapshot.db space --quota 8Gi
etcdpvc --kubeadm space -o json | jq '.plan[].message'
etcdpvc --kubeadm space --reclaim
etcdpvc --kubeadm space --reclaim --keep 1000 --yes`,
		flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "table", Usage: "table or json"},
			&cli.StringFlag{Name: "quota", Usage: "etcd's --quota-backend-bytes, as `BYTES` or a quantity (8Gi); default: the etcd manifest's with --kubeadm, else etcd's default 2Gi"},
			&cli.IntFlag{Name: "margin", Value: 10, Usage: "stay this `PERCENT` of the quota under it"},
			&cli.IntFlag{Name: "top", Value: 10, Usage: "how many groups, largest objects, hottest keys and leases to list"},
			&cli.Int64Flag{Name: "since", Usage: "live: count the hottest keys' changes from revision `REV` (etcd's watch replays them)"},
			&cli.Int64Flag{Name: "page-size", Value: 500, Usage: "keys per range request (live etcd)"},
			&cli.BoolFlag{Name: "reclaim", Usage: "carry the plan out: compact, defragment one member at a time (leader last), disarm NOSPACE"},
			&cli.Int64Flag{Name: "keep", Usage: "--reclaim: compact at the current revision less `REVISIONS`, keeping a recent window"},
			&cli.BoolFlag{Name: "yes", Aliases: []string{"y"}, Usage: "--reclaim: without asking (required when stdin is not a terminal)"},
			&cli.DurationFlag{Name: "wait-timeout", Value: 2 * time.Minute, Usage: "--reclaim: how long to wait for a defragmented member to answer and catch up"},
		},
		args: cliargs.None,
		action: func(c *cli.Context, e *env, in *input) error {
			r, local, err := spaceRequest(c, in.g)
			if err != nil {
				return err
			}
			reclaim := c.Bool("reclaim")
			if !reclaim {
				for _, f := range []string{"keep", "yes", "wait-timeout"} {
					if c.IsSet(f) {
						return usagef("--%s goes with --reclaim", f)
					}
				}
			}
			if reclaim && r.JSON {
				return usagef("--reclaim prints its steps as they are done: -o json is for the report alone")
			}
			if c.Int64("keep") < 0 {
				return usagef("--keep must not be negative")
			}
			s, p, err := openCounting(e, in.g, "space")
			if err != nil {
				return err
			}
			defer s.Close()
			if reclaim {
				return s.Reclaim(e.ctx, e, e.stdout, flows.ReclaimRequest{SpaceRequest: r, Keep: c.Int64("keep"), Yes: c.Bool("yes"), WaitTimeout: c.Duration("wait-timeout"), Local: local}, p)
			}
			return s.Space(e.ctx, e.stdout, r, p, e.Warn)
		},
	}
}

// spaceRequest reads space's flags, the quota from --quota or the etcd
// manifest, and the member whose data directory this node holds (from the
// manifest with --kubeadm; nil: none known).
func spaceRequest(c *cli.Context, g *globalOptions) (flows.SpaceRequest, *flows.LocalMember, error) {
	r := flows.SpaceRequest{JSON: c.String("output") == "json", Margin: c.Int("margin"), Top: c.Int("top"), Since: c.Int64("since"), PageSize: c.Int64("page-size")}
	if err := cliargs.CheckOutput(c.String("output"), "table", "json"); err != nil {
		return r, nil, err
	}
	if r.Margin < 0 || r.Margin >= 100 || r.Top < 0 || r.Since < 0 || r.PageSize <= 0 {
		return r, nil, usagef("--margin must be 0 to 99, --top and --since not negative, --page-size positive")
	}
	r.Quota, r.QuotaSource = inspect.DefaultQuota, inspect.QuotaDefault
	if q := c.String("quota"); q != "" {
		n, err := apiresource.ParseQuantity(q)
		if err != nil || n.Sign() <= 0 {
			return r, nil, usagef("--quota %q: not a positive byte count or quantity (8589934592, 8Gi)", q)
		}
		r.Quota, r.QuotaSource = n.Value(), inspect.QuotaFlag
	}
	if !g.Kubeadm {
		if r.QuotaSource == inspect.QuotaDefault {
			r.QuotaNote = "quota: etcd's default (2Gi), not read: give --quota, or --kubeadm to read it from the etcd manifest"
		}
		return r, nil, nil
	}
	m, err := kubeadm.ReadEtcd(g.ManifestsDir)
	var local *flows.LocalMember
	switch {
	case errors.Is(err, kubeadm.ErrNoEtcdManifest):
		if r.QuotaSource == inspect.QuotaDefault {
			r.QuotaNote = fmt.Sprintf("quota: %v (an external etcd?): etcd's default; give --quota", err)
		}
		return r, nil, nil
	case err != nil:
		return r, nil, err
	case m.Name != "" && m.DataDir != "":
		local = &flows.LocalMember{Name: m.Name, DataDir: m.DataDir}
	}
	switch {
	case r.QuotaSource == inspect.QuotaFlag:
	case m.QuotaBackendBytes > 0:
		r.Quota, r.QuotaSource = m.QuotaBackendBytes, inspect.QuotaManifest
	default:
		r.QuotaNote = "quota: " + m.Manifest + " sets no --quota-backend-bytes: etcd's default"
	}
	return r, local, nil
}
