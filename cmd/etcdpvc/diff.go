package main

import (
	"errors"
	"os"
	"sync"

	"github.com/urfave/cli/v2"

	"github.com/etcdpvc/etcdpvc/flows"
	"github.com/etcdpvc/etcdpvc/internal/cliargs"
	"github.com/etcdpvc/etcdpvc/store"
)

// diffOptions are the flags of `etcdpvc diff`.
type diffOptions struct {
	A, B               string
	Resource           string
	Namespace          string
	AllNamespaces      bool
	Output             string
	ShowSecrets        bool
	IgnoreMetadataOnly bool
	PageSize           int64
	// Members: compare the members of one cluster (Args: their db
	// files, or RESOURCE at most for the live endpoints) at Rev.
	Members bool
	Args    []string
	Rev     int64
}

// diffArgs is diff's declaration of A B [RESOURCE], checked by the action:
// with --members the arguments are the members' files.
var diffArgs = cliargs.Args{Kind: cliargs.ArgsCount, Min: 2, Max: 3, Usage: "diff takes two states A and B (a file, live or rev:N) and at most one RESOURCE"}

func diffCommand() command {
	return command{
		name:      "diff",
		usage:     "compare two states of the keyspace: files, the live etcd, revisions",
		argsUsage: "A B [RESOURCE] | --members A.db B.db [C.db ...] | --members [RESOURCE]",
		desc: "diff compares two states object by object and prints one line per object that differs:\n" +
			"ADDED (only in B), DELETED (only in A) or MODIFIED, its resource, namespace, name, its mod\n" +
			"revision in A and in B, and for MODIFIED what changed (as history says it). A and B are each\n" +
			"a db or snapshot file, `live` (the etcd of the connection flags) or `rev:N`: revision N of\n" +
			"the other side's source (of --db, or of the live etcd, when both are rev:N). A namespaced\n" +
			"RESOURCE is compared in one namespace, as in kubectl: -n NAMESPACE, else default; -A compares\n" +
			"every namespace. The closing line names the namespace compared.\n" +
			"Stored bytes are compared first; only values that differ are decrypted (--encryption-config)\n" +
			"and decoded. A value rewritten with another key or provider, same plaintext, is reported as\n" +
			"re-encrypted, content unchanged; an object of which only resourceVersion or the times of\n" +
			"managedFields changed as metadata only (--ignore-metadata-only leaves those out); one whose\n" +
			"stored fields differ only where this build does not decode them (a newer apiserver's field)\n" +
			"as changed in fields this build does not decode. A Secret's\n" +
			"values are shown by size unless --show-secrets. Totals per resource end the output.\n" +
			"-o diff adds a unified YAML diff per object; -o json writes one JSON object a line (\"type\":\n" +
			"\"object\" per object, then \"type\": \"total\" per resource and one \"type\": \"summary\").\n" +
			"Exit status: 0 when the states are the same, 11 when they differ, 10 when a value could not\n" +
			"be read on a side (listed: its line says why), never reported as equal; 13 (no verdict) when\n" +
			"the namespace compared holds nothing of the scope on either side while other namespaces do.\n" +
			"Both sides are read before the first line: a side that cannot be (a compacted rev:N) prints\n" +
			"none. diff does not read --wal (a log replays over one db only): dump --all-revisions or\n" +
			"history read it.\n" +
			"A `live` side is the latest state: a compaction of etcd while it is read does not stop it (it\n" +
			"continues from the last key read at the current revision, each key compared once), and the\n" +
			"summary and a warning say which revisions it spans (-o json: readToRevisionA/B). A `rev:N`\n" +
			"side is one revision: a compaction past N stops the diff after the records written, with\n" +
			"status 10 and where else to read revision N (--db, --wal); it is never reported as equal.\n" +
			"\n" +
			"--members compares the members of one cluster, to find the one that diverged (a bad disk, a\n" +
			"bug): their db files (`diff --members A.db B.db C.db`: copies, or the files of stopped\n" +
			"members; every key under --prefix is compared), or the live members of --endpoints (`--endpoints\n" +
			"E1,E2,E3 diff --members [RESOURCE]`), each read through a client of its endpoint alone. All\n" +
			"are read at one revision: --rev N, else for files the lowest current revision among them, live\n" +
			"the current revision of the first endpoint that answers. Keys are compared by value, mod and\n" +
			"create revision, version and lease, in one merged pass. With three members or more, each key\n" +
			"they do not all agree on names the member that differs from the strict majority, and how:\n" +
			"MISSING (the majority holds it), EXTRA (only it holds it), CHANGED (value or revisions); a key\n" +
			"no strict majority agrees on is SPLIT. With two members each differing key is DIFFERS: no\n" +
			"majority can say which one diverged. Then a table of the members: keys read, keys in the\n" +
			"minority, etcd's hashkv at the revision (what `etcdctl endpoint hashkv` prints, computed from a\n" +
			"file exactly as etcd does), with per-resource hashes of files for the resources that differ\n" +
			"(not hashes etcd computes); and the verdict, which names a diverged member only when a strict\n" +
			"majority agrees on every differing key and on the hashkv. -o json writes one JSON object a line\n" +
			"(\"type\": \"key\", \"member\", \"total\", \"summary\"): a diverged member's \"how\" (missing, extra,\n" +
			"changed) and \"differs\" (the fields); the summary's \"outcome\" (agree, diverged, differ,\n" +
			"incomplete, nothing-compared) and \"reason\" (the fact that decided it: majority, two-members,\n" +
			"no-majority, hashkv-equal, hashkv-differs, hashkv-not-compared, no-hashkv-majority,\n" +
			"hashkv-disagrees, unread, read-partly, empty-scope); the verdict's words only in \"message\".\n" +
			"Exit status: 0 when the members agree on every key compared, 11 when they differ (a diverged\n" +
			"member named or not), 10 when a member could not be read (or not to the end), 13 (no verdict)\n" +
			"when no key of the scope is on any member.",
		examples: `etcdpvc diff before.db after.db
etcdpvc --db snapshot.db diff rev:1200 rev:1500 pvc -A
etcdpvc --kubeadm diff snapshot.db live -A --ignore-metadata-only
etcdpvc diff before.db after.db secrets -n demo -o diff
etcdpvc diff --members m1.db m2.db m3.db
etcdpvc --endpoints https://10.0.0.1:2379,https://10.0.0.2:2379,https://10.0.0.3:2379 diff --members -o json`,
		flags: []cli.Flag{
			&cli.StringFlag{Name: "namespace", Aliases: []string{"n"}, Usage: "compare this namespace only"},
			&cli.BoolFlag{Name: "all-namespaces", Aliases: []string{"A"}, Usage: "compare every namespace"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "table", Usage: "table, diff (with a unified YAML diff per object) or json (one object a line)"},
			&cli.BoolFlag{Name: "show-secrets", Usage: "show the values of a Secret that changed instead of their sizes"},
			&cli.BoolFlag{Name: "ignore-metadata-only", Usage: "leave out objects of which only resourceVersion or managedFields times changed"},
			&cli.Int64Flag{Name: "page-size", Value: 500, Usage: "keys per range request (live etcd)"},
			&cli.BoolFlag{Name: "members", Usage: "compare the members of one cluster: their db files, or the live members of --endpoints"},
			&cli.Int64Flag{Name: "rev", Usage: "with --members: the revision compared (default: the lowest current revision of the files, the current revision of the first endpoint)"},
		},
		// diffArgs, checked by the action: --members takes other arguments.
		args: cliargs.Args{Kind: cliargs.ArgsFree},
		action: func(c *cli.Context, e *env, in *input) error {
			o := diffOptions{A: c.Args().Get(0), B: c.Args().Get(1), Resource: c.Args().Get(2),
				Namespace: c.String("namespace"), AllNamespaces: c.Bool("all-namespaces"), Output: c.String("output"),
				ShowSecrets: c.Bool("show-secrets"), IgnoreMetadataOnly: c.Bool("ignore-metadata-only"), PageSize: c.Int64("page-size"),
				Members: c.Bool("members"), Args: c.Args().Slice(), Rev: c.Int64("rev")}
			if o.Members {
				return runMembers(e, in.g, o)
			}
			if err := diffArgs.CheckCount("diff", c.NArg()); err != nil {
				return err
			}
			if c.IsSet("rev") {
				return usagef("diff: --rev is for --members; compare a revision with rev:N as A or B")
			}
			if err := cliargs.CheckOutput(o.Output, "table", "diff", "json"); err != nil {
				return err
			}
			if o.PageSize <= 0 {
				return usagef("--page-size must be positive")
			}
			if o.Namespace != "" && o.AllNamespaces {
				return usagef("give -n NAMESPACE or -A, not both")
			}
			return runDiff(e, in.g, o)
		},
	}
}

func runDiff(e *env, g *globalOptions, o diffOptions) error {
	r := flows.DiffRequest{A: o.A, B: o.B, DB: g.DB, WAL: g.WAL, Resource: o.Resource, Namespace: o.Namespace, AllNamespaces: o.AllNamespaces,
		Output: o.Output, ShowSecrets: o.ShowSecrets, IgnoreMetadataOnly: o.IgnoreMetadataOnly, PageSize: o.PageSize, Warn: e.Warn}
	if _, _, err := r.Sources(); err != nil {
		return err
	}
	// --kubeadm is read once; each side's session starts from its result.
	if err := applyKubeadm(g); err != nil {
		return err
	}
	first := true
	return flows.Diff(e.ctx, e.stdout, func(file string) (*flows.Session, error) {
		gs := *g
		gs.DB = file
		if !first {
			gs.kubeadmWarnings = nil
		}
		first = false
		s, err := openSession(e, &gs)
		if err != nil {
			return nil, err
		}
		return s.Session, nil
	}, r)
}

// runMembers is `diff --members`: the members' files, or the live
// endpoints' members.
func runMembers(e *env, g *globalOptions, o diffOptions) error {
	if err := cliargs.CheckOutput(o.Output, "table", "json"); err != nil {
		return err
	}
	switch {
	case o.PageSize <= 0:
		return usagef("--page-size must be positive")
	case o.Namespace != "" && o.AllNamespaces:
		return usagef("give -n NAMESPACE or -A, not both")
	case o.IgnoreMetadataOnly || o.ShowSecrets:
		return usagef("diff --members compares stored bytes and prints no value: --ignore-metadata-only and --show-secrets do not apply")
	case g.DB != "" || len(g.WAL) > 0:
		return usagef("diff --members: give the members' db files as arguments (not --db or --wal), or their endpoints with --endpoints")
	}
	r := flows.MembersRequest{Rev: o.Rev, Namespace: o.Namespace, AllNamespaces: o.AllNamespaces, Output: o.Output, PageSize: o.PageSize}
	switch {
	case len(o.Args) >= 2:
		r.Files = o.Args
	case len(o.Args) == 1 && isFile(o.Args[0]):
		return usagef("diff --members compares two members or more: give their db files, or their endpoints with --endpoints")
	case len(o.Args) == 1:
		r.Resource = o.Args[0]
	}
	if r.Files != nil && (o.Namespace != "" || o.AllNamespaces) {
		return usagef("diff --members with files compares every key: -n and -A are for live members with RESOURCE")
	}
	if r.Files == nil {
		s, err := openSession(e, g)
		if err != nil {
			return err
		}
		defer s.Close()
		return s.Members(e.ctx, e.stdout, r)
	}
	// The other files are hashed while the first opens, and found
	// verified when they open.
	verified := verifyTrailers(e, g, r.Files[1:])
	defer verified()
	// The session (scope, prefix, encryption) is the first file that
	// opens; one that does not is reported among the members.
	var firstErr error
	for i, f := range r.Files {
		gs := *g
		gs.DB = f
		if i > 0 {
			gs.kubeadmWarnings = nil
			verified()
		}
		s, err := openSession(e, &gs)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			if errors.As(err, new(*usageError)) {
				return err
			}
			continue
		}
		defer s.Close()
		verified()
		return s.Members(e.ctx, e.stdout, r)
	}
	return firstErr
}

// verifyTrailers verifies the sha256 trailers of files, each on a
// goroutine of its own, while the first file opens as the session, and
// remembers them in the hash cache, where opening the files finds them
// (store.VerifyTrailer): the files are hashed at once, not one after the
// other. It returns what waits for them to end. Without a hash cache, or
// with the check skipped, it does nothing.
func verifyTrailers(e *env, g *globalOptions, files []string) (wait func()) {
	dir := g.connectOptions(e).HashCacheDir
	if dir == "" || g.SkipHashCheck {
		return func() {}
	}
	var wg sync.WaitGroup
	for _, f := range files {
		wg.Go(func() { store.VerifyTrailer(e.ctx, f, dir) })
	}
	return wg.Wait
}

// isFile reports whether path names an existing file.
func isFile(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
