package main

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/urfave/cli/v2"
	"sigs.k8s.io/yaml"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/surgery"
)

// historyOptions are the flags of `etcdpvc history`.
type historyOptions struct {
	Args      []string
	Namespace string
	Key       string
	Output    string
}

func historyCommand() command {
	return command{
		name:      "history",
		usage:     "list every revision of one object that etcd still holds",
		argsUsage: "RESOURCE NAME | RESOURCE/NAME | --etcd-key KEY",
		desc: "history shows every revision of one key still held by etcd (or by --db), deletions and\n" +
			"re-creations included: revision, version, create revision, lease and a one-line summary of\n" +
			"what changed. A history whose start was compacted away says so. Revisions are indexed by\n" +
			"mod revision: a re-created object starts again at version 1.",
		examples: `etcdpvc history pvc www-web-0 -n demo
etcdpvc --db snapshot.db history cm web-config -n demo -o json`,
		flags: append(objectFlags(),
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "table", Usage: "table, json or yaml"},
		),
		action: func(c *cli.Context, e *env) error {
			o := historyOptions{Args: c.Args().Slice(), Namespace: c.String("namespace"), Key: c.String("etcd-key"), Output: c.String("output")}
			if err := checkOutput(o.Output, "table", "json", "yaml"); err != nil {
				return err
			}
			g, err := resolveGlobals(c, e)
			if err != nil {
				return err
			}
			return runHistory(e, g, o)
		},
	}
}

// historyRow is one revision of a key.
type historyRow struct {
	Revision       int64  `json:"revision"`
	Version        int64  `json:"version"`
	CreateRevision int64  `json:"createRevision"`
	Lease          int64  `json:"lease,omitempty"`
	Deleted        bool   `json:"deleted,omitempty"`
	Change         string `json:"change"`
}

func runHistory(e *env, g *globalOptions, o historyOptions) error {
	s, err := openSession(e, g)
	if err != nil {
		return err
	}
	defer s.Close()
	ref, err := s.ref(o.Args, o.Namespace, o.Key)
	if err != nil {
		return err
	}
	var rows []historyRow
	var prev map[string]any
	var prevEnc string
	info, err := s.reader.History(e.ctx, ref.Key, func(ev store.Event) error {
		row := historyRow{Revision: ev.KV.ModRevision, Version: ev.KV.Version, CreateRevision: ev.KV.CreateRevision, Lease: ev.KV.Lease, Deleted: ev.Deleted}
		switch {
		case ev.Deleted:
			row.Change = "deleted"
			prev = nil
		default:
			cur, err := s.codec.Open(e.ctx, ev.KV)
			if err != nil {
				row.Change = "undecodable: " + err.Error()
				prev = nil
				break
			}
			enc := "in the clear"
			if cur.Encrypted != nil {
				enc = "encrypted with " + cur.Encrypted.String()
			}
			changes := codec.Changes(prev, cur.Obj.Content)
			switch {
			case ev.KV.Version == 1:
				row.Change = "created"
			case prev == nil:
				row.Change = "first revision held"
			case len(changes) == 0 && enc != prevEnc:
				row.Change = "content unchanged, now stored " + enc
			case len(changes) == 0:
				row.Change = "rewritten, content unchanged"
			default:
				row.Change = codec.SummarizeChanges(changes, 4)
			}
			prev, prevEnc = cur.Obj.Content, enc
		}
		rows = append(rows, row)
		return nil
	})
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		return surgery.NotFound(e.ctx, s.reader, s.g.Prefix, ref.Key, 0, fmt.Errorf("history of %s: %w", ref.Key, store.ErrNotFound))
	}
	compacted := ""
	if first := rows[0]; !first.Deleted && first.Version > 1 {
		compacted = fmt.Sprintf("history before revision %d was compacted (compaction revision %d); the first revision held is version %d of the object created at revision %d",
			first.Revision, info.CompactRevision, first.Version, first.CreateRevision)
	}
	switch o.Output {
	case "json", "yaml":
		doc := map[string]any{"key": ref.Key, "revision": info.Revision, "compactRevision": info.CompactRevision, "events": rows}
		if compacted != "" {
			doc["compactedStart"] = compacted
		}
		var b []byte
		if o.Output == "json" {
			b, err = json.MarshalIndent(doc, "", "  ")
			b = append(b, '\n')
		} else {
			b, err = yaml.Marshal(doc)
		}
		if err != nil {
			return err
		}
		_, err = e.stdout.Write(b)
		return err
	}
	if compacted != "" {
		fmt.Fprintf(e.stdout, "# %s\n", compacted)
	}
	t := newTable(e.stdout, "REVISION", "VERSION", "CREATED", "LEASE", "CHANGE")
	for _, r := range rows {
		lease := "-"
		if r.Lease != 0 {
			lease = strconv.FormatInt(r.Lease, 16)
		}
		ver, created := strconv.FormatInt(r.Version, 10), strconv.FormatInt(r.CreateRevision, 10)
		if r.Deleted {
			ver, created = "-", "-"
		}
		if err := t.Row(strconv.FormatInt(r.Revision, 10), ver, created, lease, r.Change); err != nil {
			return err
		}
	}
	return t.Flush()
}
