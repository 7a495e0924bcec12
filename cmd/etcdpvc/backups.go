package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/etcdpvc/etcdpvc/flows"
	"github.com/etcdpvc/etcdpvc/internal/cliargs"
	"github.com/etcdpvc/etcdpvc/internal/textout"
	"github.com/etcdpvc/etcdpvc/session"
	"github.com/etcdpvc/etcdpvc/surgery"
)

func backupsCommand() command {
	return command{
		name:  "backups",
		usage: "list the backups in the backup directory, newest first",
		args:  cliargs.Args{Kind: cliargs.ArgsCount},
		desc: "backups lists the backup files of --backup-dir (default $XDG_STATE_HOME/etcdpvc/backups or\n" +
			"~/.local/state/etcdpvc/backups), newest first: when each was taken, the operation it belongs to\n" +
			"(one id for every key of one command run: `etcdpvc restore --operation ID --backup-dir DIR`\n" +
			"undoes it), its key, the etcd cluster ID (or endpoint) it was taken from, and LIVE: whether the\n" +
			"key still holds what the write left (matches), holds the backup's value again (restored), or\n" +
			"something else (changed). LIVE is checked only when the connection flags (--endpoints,\n" +
			"--kubeadm, ... or their ETCDCTL_* variables) name a live etcd, and only for backups of its\n" +
			"cluster; otherwise it says \"not checked\". Only digests are compared: no value is printed,\n" +
			"a Secret's included. A file that is not a backup etcdpvc reads is listed with why (exit 10).",
		examples: `etcdpvc backups
etcdpvc --kubeadm backups -o json
etcdpvc backups --backup-dir /root/.local/state/etcdpvc/backups`,
		flags: []cli.Flag{
			&cli.StringFlag{Name: "backup-dir", Usage: "the backup directory (default $XDG_STATE_HOME/etcdpvc/backups or ~/.local/state/etcdpvc/backups)"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "table", Usage: "table, json or yaml"},
		},
		action: func(c *cli.Context, e *env, in *input) error {
			format := c.String("output")
			if format != "table" && format != "json" && format != "yaml" {
				return usagef("-o %q: table, json or yaml", format)
			}
			var s *cliSession
			offline := "no live etcd named (give --endpoints or --kubeadm to check)"
			switch {
			case in.g.DB != "" || len(in.g.WAL) > 0:
				offline = "a db file or a write-ahead log is read, not the live cluster"
			case session.NamesEtcd(in.g.Options):
				var err error
				if s, err = openSession(e, in.g); err != nil {
					return err
				}
				defer s.Close()
			}
			var fs *flows.Session
			if s != nil {
				fs = s.Session
			}
			rows, err := flows.ListBackups(e.ctx, fs, c.String("backup-dir"), offline)
			if rows == nil && err != nil {
				return err
			}
			if perr := printBackups(e, format, rows); perr != nil {
				return errors.Join(err, perr)
			}
			return err
		},
	}
}

// printBackups prints the rows as a table, or as one JSON/YAML document
// (kind BackupList).
func printBackups(e *env, format string, rows []flows.BackupRow) error {
	if format != "table" {
		doc := struct {
			APIVersion string            `json:"apiVersion"`
			Kind       string            `json:"kind"`
			Items      []flows.BackupRow `json:"items"`
		}{surgery.RecordListAPIVersion, "BackupList", rows}
		if doc.Items == nil {
			doc.Items = []flows.BackupRow{}
		}
		return printResult(e.stdout, format, doc)
	}
	if len(rows) == 0 {
		fmt.Fprintln(e.stderr, "etcdpvc: no backups in the backup directory")
		return nil
	}
	t := textout.NewTable(e.stdout, "TIME", "OPERATION", "KEY", "CLUSTER", "LIVE", "BACKUP")
	for _, r := range rows {
		op, cluster, key := r.OperationID, r.ClusterID, r.Key
		if op == "" {
			op = "-"
		}
		if cluster == "" {
			cluster = strings.Join(r.Endpoints, ",")
		}
		if cluster == "" {
			cluster = "-"
		}
		switch {
		case r.Error != "":
			key, r.Live = "-", "unreadable: "+r.Error
		case r.Live == flows.LiveNotChecked:
			r.Live = "not checked: " + r.Message
		}
		when := r.Time
		if when == "" {
			when = "-"
		}
		if err := t.Row(when, op, key, cluster, r.Live, r.Path); err != nil {
			return err
		}
	}
	return t.Flush()
}
