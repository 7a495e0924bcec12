package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/etcdpvc/etcdpvc/connect"
	"github.com/etcdpvc/etcdpvc/store"
	"github.com/etcdpvc/etcdpvc/surgery"
	"github.com/etcdpvc/etcdpvc/verify"
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

// confirm asks the user on a terminal; off a terminal it needs --yes. The
// question names each object and where it is written (connect.Session.Target).
// Ctrl-C at the question (e.ctx cancelled) ends it at once, refused, with
// nothing written.
func confirm(e *env, s *session, o writeOptions, keys ...string) error {
	if o.Yes {
		return nil
	}
	if !isTerminal(e.stdin) {
		return &refusedError{msg: "not confirmed: stdin is not a terminal and --yes was not given; nothing written",
			hint: "re-run with --yes to write this change, or --dry-run to only see the diff"}
	}
	what := "this change"
	if len(keys) > 1 {
		what = "these changes"
	}
	return ask(e, fmt.Sprintf("Write %s to %s?", what, s.DescribeWrite(keys)))
}

// ask asks question on stderr and reads the answer from the terminal: yes
// or y goes on. Ctrl-C at the question (e.ctx cancelled) ends it at once,
// refused, with nothing written.
func ask(e *env, question string) error {
	fmt.Fprintf(e.stderr, "%s [y/N] ", question)
	type answer struct {
		line string
		err  error
	}
	answers := make(chan answer, 1)
	go func() {
		// This read cannot be interrupted; on Ctrl-C it is abandoned and
		// the process exits.
		line, err := bufio.NewReader(e.stdin).ReadString('\n')
		answers <- answer{line, err}
	}()
	var a answer
	select {
	case <-e.ctx.Done():
		fmt.Fprintln(e.stderr)
		return &refusedError{msg: "interrupted at the confirmation prompt; nothing written"}
	case a = <-answers:
	}
	if a.err != nil && !errors.Is(a.err, io.EOF) {
		return fmt.Errorf("read confirmation: %w", a.err)
	}
	if r := strings.ToLower(strings.TrimSpace(a.line)); r != "y" && r != "yes" {
		return &refusedError{msg: "not confirmed; nothing written"}
	}
	return nil
}

// applyPlan is the write path of every command that writes one object.
func applyPlan(e *env, s *session, plan *surgery.Plan, o writeOptions) error {
	_, err := writePlans(e, s, []*surgery.Plan{plan}, o)
	return err
}

// writePlans is the one write path, for one plan or several that belong
// together: it prints every diff and warning, stops at --dry-run, asks
// once, and lets surgery.Execute write the plans in order, printing each
// write as it is made and how to undo them.
func writePlans(e *env, s *session, plans []*surgery.Plan, o writeOptions) ([]surgery.Step, error) {
	var todo, noop []string
	for _, p := range plans {
		if p.NoOp {
			noop = append(noop, p.ObjectName())
		} else {
			todo = append(todo, p.ObjectName())
		}
	}
	for _, p := range plans {
		if p.NoOp {
			if len(todo) == 0 {
				fmt.Fprintf(e.stdout, "%s: no change (%s); nothing written\n", p.Key, p.Description)
			} else {
				fmt.Fprintf(e.stdout, "%s: already as asked (%s), no change; only %s changes\n", p.ObjectName(), p.Description, strings.Join(todo, " and "))
			}
			continue
		}
		fmt.Fprint(e.stdout, colorize(e, p.Diff))
		if !strings.HasSuffix(p.Diff, "\n") {
			fmt.Fprintln(e.stdout)
		}
		for _, w := range p.Warnings {
			e.warn(w)
		}
	}
	if len(todo) == 0 {
		return nil, nil
	}
	v, err := newVerifier(e, s)
	if err != nil {
		return nil, err
	}
	for _, p := range plans {
		if !p.NoOp {
			if err := v.Before(e.ctx, p); err != nil {
				return nil, err
			}
		}
	}
	if o.DryRun {
		for _, p := range plans {
			if !p.NoOp {
				fmt.Fprintf(e.stdout, "dry run: %s; nothing written\n", p.Description)
			}
		}
		return nil, nil
	}
	w, err := store.AsWriter(s.Reader)
	if err != nil {
		return nil, withHint(fmt.Errorf("%s: %w", s.Description, err), "a db file is read-only: write through --endpoints, or edit a copy with --db IN --out OUT")
	}
	var keys []string
	for _, p := range plans {
		if !p.NoOp {
			keys = append(keys, p.Key)
		}
	}
	if err := confirm(e, s, o, keys...); err != nil {
		return nil, err
	}
	steps, err := surgery.Execute(e.ctx, w, plans, surgery.ExecuteOptions{
		ApplyOptions: applyOptions(e, s, o),
		Verifier:     v,
		OnWritten: func(st surgery.Step) {
			o, ok := st.Outcome()
			if !ok {
				return
			}
			for _, w := range o.Warnings {
				e.warn(w)
			}
			if o.Deleted {
				fmt.Fprintf(e.stdout, "deleted: %s at revision %s (delete revision %d, %s)\nbackup: %s\n", o.Key, o.From, o.Revision, s.Target(o.Key), o.Backup)
				return
			}
			fmt.Fprintf(e.stdout, "written: %s revision %s → %d (%s)\nbackup: %s\n", o.Key, o.From, o.Revision, s.Target(o.Key), o.Backup)
		},
	})
	if err != nil {
		if errors.Is(err, surgery.ErrPartial) && snapshotCopyOf(s) != nil {
			err = withHint(err, fmt.Sprintf("%s holds only part of the change: delete it and run the command again (the input db is unchanged)", o.Out))
		}
		if errors.Is(err, surgery.ErrNotAccepted) {
			err = withHint(err, "the write is made, but the apiserver does not accept it: undo it with "+undoCommands(steps)+" and see the runbook's section on verification")
		}
		return steps, err
	}
	if done, err := finishSnapshotWrite(e, s); done {
		return steps, err
	}
	fmt.Fprintf(e.stdout, "undo with: %s\n", undoCommands(steps))
	return steps, nil
}

// undoCommands are the restores that undo the steps written, last first.
func undoCommands(steps []surgery.Step) string { return surgery.UndoSteps(steps) }

// newVerifier connects to the apiserver of the cluster written (the
// kubeconfig of --kubeconfig, --kubeadm or $KUBECONFIG), unless
// --verify=never or the target is a db file.
func newVerifier(e *env, s *session) (*verify.Verifier, error) {
	g := s.g
	o := verify.Options{Mode: g.Verify, Reader: s.Reader, Planner: &s.Planner,
		Note: func(msg string) { fmt.Fprintln(e.stdout, msg) }}
	if s.IsFile() {
		o.Offline = "the target is a db file (--db), which no apiserver serves"
	} else {
		o.Kubeconfig, o.KubeconfigErr = g.FindKubeconfig()
		var oe *connect.OptionError
		if errors.As(o.KubeconfigErr, &oe) {
			return nil, &usageError{msg: oe.Error()}
		}
	}
	return verify.New(e.ctx, o), nil
}

// editCommand builds a write command that names one object and applies
// one edit.
func planAndApply(e *env, g *globalOptions, args []string, namespace, key string, o writeOptions, edit func(s *session) (surgery.Edit, error)) error {
	s, err := openWriteSession(e, g, o)
	if err != nil {
		return err
	}
	defer s.Close()
	s.Planner.ShowSecrets = o.ShowSecrets
	ref, err := s.ref(args, namespace, key)
	if err != nil {
		return err
	}
	ed, err := edit(s)
	if err != nil {
		return err
	}
	plan, err := s.Planner.MakePlan(e.ctx, s.Reader, ref.Key, ed)
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
		e.warn(w)
	}
	src, err := s.BackupSource(e.ctx)
	if err != nil {
		e.warn(fmt.Sprintf("the backup cannot record the cluster's ID (%v); restore will not be able to check it", err))
	}
	return surgery.ApplyOptions{BackupDir: dir, Endpoints: s.g.Endpoints, ToolVersion: toolVersion(), Source: src}
}
