package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/surgery"
)

// writeOptions are the flags every write command shares.
type writeOptions struct {
	Yes         bool
	DryRun      bool
	BackupDir   string
	ShowSecrets bool
	// Out, with --db, writes into a copy of the db file (snapshot.go).
	Out string
}

func writeFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "yes", Aliases: []string{"y"}, Usage: "write without asking (required when stdin is not a terminal)"},
		&cli.BoolFlag{Name: "dry-run", Usage: "print the diff and write nothing"},
		&cli.StringFlag{Name: "backup-dir", Usage: "where backups and audit.log go (default $XDG_STATE_HOME/etcdpvc/backups or ~/.local/state/etcdpvc/backups)"},
		&cli.BoolFlag{Name: "show-secrets", Usage: "show Secret values in the diff"},
		&cli.StringFlag{Name: "out", Usage: "with --db IN: write the edit into a new copy OUT of IN, to restore with etcdutl (IN is never changed)"},
	}
}

func readWriteOptions(c *cli.Context) writeOptions {
	return writeOptions{Yes: c.Bool("yes"), DryRun: c.Bool("dry-run"), BackupDir: c.String("backup-dir"), ShowSecrets: c.Bool("show-secrets"), Out: c.String("out")}
}

// writeHelp is the part of every write command's description that says how
// it writes.
const writeHelp = "Every write shows its diff first, asks for confirmation on a terminal (--yes otherwise),\n" +
	"saves a durable backup of the stored bytes (mode 0600) and commits with a compare-and-swap on\n" +
	"the key's mod revision, keeping its lease. `etcdpvc restore BACKUP` undoes it."

// colorize colours a unified diff for a terminal, unless NO_COLOR is set.
func colorize(e *env, diff string) string {
	if !isTerminal(e.stdout) || e.getenv("NO_COLOR") != "" {
		return diff
	}
	var b strings.Builder
	for _, line := range strings.SplitAfter(diff, "\n") {
		switch {
		case strings.HasPrefix(line, "+++"), strings.HasPrefix(line, "---"):
			b.WriteString("\x1b[1m" + strings.TrimSuffix(line, "\n") + "\x1b[0m\n")
		case strings.HasPrefix(line, "+"):
			b.WriteString("\x1b[32m" + strings.TrimSuffix(line, "\n") + "\x1b[0m\n")
		case strings.HasPrefix(line, "-"):
			b.WriteString("\x1b[31m" + strings.TrimSuffix(line, "\n") + "\x1b[0m\n")
		case strings.HasPrefix(line, "@@"):
			b.WriteString("\x1b[36m" + strings.TrimSuffix(line, "\n") + "\x1b[0m\n")
		default:
			b.WriteString(line)
		}
	}
	return b.String()
}

// confirm asks the user on a terminal; off a terminal it needs --yes.
func confirm(e *env, o writeOptions, key string) error {
	if o.Yes {
		return nil
	}
	if !isTerminal(e.stdin) {
		return &refusedError{msg: "not confirmed: stdin is not a terminal and --yes was not given; nothing written",
			hint: "re-run with --yes to write this change, or --dry-run to only see the diff"}
	}
	fmt.Fprintf(e.stderr, "Write this change to %s? [y/N] ", key)
	line, err := bufio.NewReader(e.stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read confirmation: %w", err)
	}
	if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
		return &refusedError{msg: "not confirmed; nothing written"}
	}
	return nil
}

// applyPlan is the one write path of every write command: it prints the
// diff and warnings, asks, backs up and commits with a compare-and-swap.
func applyPlan(e *env, s *session, plan *surgery.Plan, o writeOptions) error {
	if plan.NoOp {
		fmt.Fprintf(e.stdout, "%s: no change (%s); nothing written\n", plan.Key, plan.Description)
		return nil
	}
	fmt.Fprint(e.stdout, colorize(e, plan.Diff))
	if !strings.HasSuffix(plan.Diff, "\n") {
		fmt.Fprintln(e.stdout)
	}
	for _, w := range plan.Warnings {
		fmt.Fprintf(e.stderr, "etcdpvc: warning: %s\n", w)
	}
	if o.DryRun {
		fmt.Fprintf(e.stdout, "dry run: %s; nothing written\n", plan.Description)
		return nil
	}
	w, err := store.AsWriter(s.reader)
	if err != nil {
		return withHint(fmt.Errorf("%s: %w", s.description, err), "a db file is read-only: write through --endpoints, or edit a copy with --db IN --out OUT")
	}
	if err := confirm(e, o, plan.Key); err != nil {
		return err
	}
	res, err := surgery.Apply(e.ctx, w, plan, applyOptions(e, s, o))
	if err != nil {
		return err
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(e.stderr, "etcdpvc: warning: %s\n", w)
	}
	from := "absent"
	if plan.Expect != 0 {
		from = fmt.Sprint(plan.Expect)
	}
	if plan.Delete {
		fmt.Fprintf(e.stdout, "deleted: %s at revision %s (delete revision %d)\nbackup: %s\n", plan.Key, from, res.Revision, res.BackupPath)
	} else {
		fmt.Fprintf(e.stdout, "written: %s revision %s → %d\nbackup: %s\n", plan.Key, from, res.Revision, res.BackupPath)
	}
	if done, err := finishSnapshotWrite(e, s); done {
		return err
	}
	fmt.Fprintf(e.stdout, "undo with: etcdpvc restore %s\n", res.BackupPath)
	return nil
}

// editCommand builds a write command that names one object and applies
// one edit.
func planAndApply(e *env, g *globalOptions, args []string, namespace, key string, o writeOptions, edit func(s *session) (surgery.Edit, error)) error {
	s, err := openWriteSession(e, g, o)
	if err != nil {
		return err
	}
	defer s.Close()
	s.codec.ShowSecrets = o.ShowSecrets
	ref, err := s.ref(args, namespace, key)
	if err != nil {
		return err
	}
	ed, err := edit(s)
	if err != nil {
		return err
	}
	plan, err := s.codec.MakePlan(e.ctx, s.reader, ref.Key, ed)
	if err != nil {
		return err
	}
	return applyPlan(e, s, plan, o)
}

// applyOptions are the options of every write: where backups go (an
// absolute path) and what they record, the cluster and how to reach it
// again included. It warns on stderr, once per command, about a backup
// directory others could tamper with.
func applyOptions(e *env, s *session, o writeOptions) surgery.ApplyOptions {
	dir := o.BackupDir
	if dir == "" {
		dir = surgery.DefaultBackupDir()
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	for _, w := range surgery.CheckBackupDir(dir) {
		fmt.Fprintf(e.stderr, "etcdpvc: warning: %s\n", w)
	}
	src := &surgery.Source{
		Endpoints:        s.g.Endpoints,
		CACert:           absPath(s.g.CACert),
		Cert:             absPath(s.g.Cert),
		Key:              absPath(s.g.Key),
		Prefix:           s.g.Prefix,
		Kubeadm:          s.g.Kubeadm,
		EncryptionConfig: absPath(s.g.EncryptionConfig),
	}
	if s.g.Kubeadm {
		src.ManifestsDir = absPath(s.g.ManifestsDir)
	}
	if s.etcd != nil {
		id, err := s.etcd.ClusterID(e.ctx)
		if err != nil {
			fmt.Fprintf(e.stderr, "etcdpvc: warning: the backup cannot record the cluster's ID (%v); restore will not be able to check it\n", err)
		}
		src.ClusterID = surgery.FormatClusterID(id)
	}
	return surgery.ApplyOptions{BackupDir: dir, Endpoints: s.g.Endpoints, ToolVersion: toolVersion(), Source: src}
}

// absPath makes a path absolute, so that a backup's record of it works
// from any directory; "" stays "".
func absPath(p string) string {
	if p == "" {
		return ""
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}
