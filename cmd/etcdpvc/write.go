package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/etcdpvc/etcdpvc/flows"
	"github.com/etcdpvc/etcdpvc/inspect"
	"github.com/etcdpvc/etcdpvc/internal/textout"
	"github.com/etcdpvc/etcdpvc/resource"
	"github.com/etcdpvc/etcdpvc/surgery"
)

// writeOptions are the flags every write command shares.
type writeOptions = flows.WriteOptions

// writeFlags are the flags of every write command, -o/--output the
// spelling of --result.
func writeFlags() []cli.Flag {
	return append(writeFlagsWithout(), resultFlag(true))
}

// writeFlagsWithout are the write flags without --result, for a command
// that declares it itself.
func writeFlagsWithout() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "yes", Aliases: []string{"y"}, Usage: "write without asking (required when stdin is not a terminal)"},
		&cli.BoolFlag{Name: "dry-run", Usage: "print the diff and write nothing"},
		&cli.StringFlag{Name: "backup-dir", Usage: "where backups and audit.log go (default $XDG_STATE_HOME/etcdpvc/backups or ~/.local/state/etcdpvc/backups)"},
		&cli.BoolFlag{Name: "show-secrets", Usage: "show Secret values in the diff"},
		&cli.BoolFlag{Name: "show-managed-fields", Usage: "show metadata.managedFields and the last-applied-configuration annotation in the diff (hidden by default, as get hides them; the write is the same)"},
		&cli.StringFlag{Name: "out", Usage: "with --db IN: write the edit into a new copy OUT of IN, to restore with etcdutl (IN is never changed)"},
	}
}

// resultFlag is --result FORMAT; with output, -o and --output spell it
// too (recover's -o prints the recovered object instead).
func resultFlag(output bool) cli.Flag {
	f := &cli.StringFlag{Name: "result", Usage: "json or yaml: print what the write did to each key as one document on stdout (schema " + surgery.RecordSchema + ", docs/write-records.md); the diff and the other lines go to stderr"}
	if output {
		f.Aliases = []string{"output", "o"}
	}
	return f
}

func readWriteOptions(c *cli.Context, e *env) writeOptions {
	return writeOptions{Yes: c.Bool("yes"), DryRun: c.Bool("dry-run"), BackupDir: c.String("backup-dir"), ShowSecrets: c.Bool("show-secrets"), Out: c.String("out"),
		ToolVersion: toolVersion(), OperationID: e.operationID(), Result: e.result, ShowManagedFields: c.Bool("show-managed-fields"),
		BeforeSend: e.hold(holdBeforeSendEnv, "the intent line appended, the transaction not yet sent"),
		AfterSend:  e.hold(holdAfterCommitEnv, "committed, the outcome line not yet appended")}
}

// The test hooks' environment variables: set to a duration, each write
// says on stderr that it reached its point and waits that long (or until
// interrupted), so that a test can stop a member or kill the process
// there. holdBeforeSendEnv holds a write once its intent line is in
// audit.log and before its transaction is sent; holdAfterCommitEnv once
// its transaction is applied and before its outcome line. They are not
// for operators.
const (
	holdBeforeSendEnv  = "ETCDPVC_TEST_HOLD_BEFORE_SEND"
	holdAfterCommitEnv = "ETCDPVC_TEST_HOLD_AFTER_COMMIT"
)

// hold is the test hook the environment variable name asks for, or nil.
func (e *env) hold(name, point string) func() {
	d, err := time.ParseDuration(e.getenv(name))
	if err != nil || d <= 0 {
		return nil
	}
	return func() {
		fmt.Fprintf(e.stderr, "etcdpvc: test hook %s: %s; holding %s\n", name, point, d)
		select {
		case <-time.After(d):
		case <-e.ctx.Done():
		}
	}
}

// operationID is the run's operation id, made once.
func (e *env) operationID() string {
	if e.opID == "" {
		e.opID = surgery.NewOperationID(time.Now())
	}
	return e.opID
}

// withResult runs a write command's action with --result FORMAT: the
// human lines go to stderr, and the document (surgery.RecordList) of what
// became of each key to stdout, after the action, whether it failed or not
// (a usage error prints none).
func withResult(c *cli.Context, e *env, action func(e *env) error) error {
	format := c.String("result")
	if format == "" {
		return action(e)
	}
	if format != "json" && format != "yaml" {
		return usagef("--result %q: json or yaml", format)
	}
	re := *e
	re.stdout, re.rawStdout = e.stderr, e.rawStderr
	re.result = flows.NewResult(e.operationID())
	re.opID = re.result.OperationID
	err := action(&re)
	e.salvaged = re.salvaged
	var u *usageError
	if errors.As(err, &u) {
		return err
	}
	if perr := printResult(e.stdout, format, re.result.Document(err)); perr != nil && err == nil {
		err = perr
	}
	return err
}

// printResult writes doc (a write's surgery.RecordList, the backups'
// list) as JSON (indented, one object) or YAML.
func printResult(w io.Writer, format string, doc any) error {
	if err := inspect.WriteDocument(w, format, doc); err != nil {
		return fmt.Errorf("print the result: %w", err)
	}
	return nil
}

// writeHelp is the part of every write command's description that says how
// it writes.
const writeHelp = "Every write shows its diff first, asks for confirmation on a terminal (--yes otherwise),\n" +
	"saves a durable backup of the stored bytes (mode 0600) and commits with a compare-and-swap on\n" +
	"the key's mod revision, keeping its lease. `etcdpvc restore BACKUP` undoes it (a write of several\n" +
	"keys: `etcdpvc restore --operation ID --backup-dir DIR`, as its undo line says). Nothing to do\n" +
	"exits 0 (\"nothing to do: …\"). The diff leaves out managedFields and the last-applied annotation\n" +
	"(--show-managed-fields). --result json|yaml (-o, except on recover) prints what the write did to\n" +
	"each key on stdout (docs/write-records.md), everything else on stderr."

// colorize escapes a unified diff (textout.Escape) and colours it for a
// terminal that takes ANSI sequences (ansiTerminal), unless NO_COLOR is
// set (no-color.org).
func colorize(e *env, diff string) string {
	diff = textout.Escape(diff)
	if !e.ansiTerminal(e.rawStdout) || e.getenv("NO_COLOR") != "" {
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

// Print, Diff, Warn, Note and Confirm make env the flows.Terminal of
// the write path: the output, stderr, and the question on the terminal.
func (e *env) Print(text string) { fmt.Fprint(e.stdout, text) }

func (e *env) Diff(diff string) {
	fmt.Fprint(e.rawStdout, colorize(e, diff))
	if !strings.HasSuffix(diff, "\n") {
		fmt.Fprintln(e.stdout)
	}
}

func (e *env) Warn(msg string) { e.warn(msg) }
func (e *env) Note(msg string) { fmt.Fprintf(e.stderr, "etcdpvc: %s\n", msg) }

// Confirm asks question on the terminal; off a terminal it refuses, with
// hint (--yes is checked before it is asked).
func (e *env) Confirm(question, hint string) error {
	if !isTerminal(e.stdin) {
		return &flows.RefusedError{Msg: "not confirmed: stdin is not a terminal and --yes was not given; nothing written", Advice: hint}
	}
	return ask(e, question)
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
		return &flows.RefusedError{Msg: "interrupted at the confirmation prompt; nothing written"}
	case a = <-answers:
	}
	if a.err != nil && !errors.Is(a.err, io.EOF) {
		return &flows.RefusedError{Msg: fmt.Sprintf("the answer at the confirmation prompt could not be read (%v); nothing written", a.err)}
	}
	if r := strings.ToLower(strings.TrimSpace(a.line)); r != "y" && r != "yes" {
		return &flows.RefusedError{Msg: "not confirmed; nothing written"}
	}
	return nil
}

// applyPlan is the write path of every command that writes one object.
func applyPlan(e *env, s *cliSession, plan *surgery.Plan, o writeOptions) error {
	_, err := writePlans(e, s, []*surgery.Plan{plan}, o)
	return err
}

// writePlans is the one write path (flows.Session.Write), for one plan
// or several that belong together.
func writePlans(e *env, s *cliSession, plans []*surgery.Plan, o writeOptions) ([]surgery.Step, error) {
	return s.Write(e.ctx, e, plans, o)
}

// newVerifier is the session's verifier (flows.Session.NewVerifier),
// its lines on stdout.
func newVerifier(e *env, s *cliSession) (*flows.Verifier, error) {
	return s.NewVerifier(e.ctx, func(msg string) { fmt.Fprintln(e.stdout, msg) })
}

// planAndApply is the write of a command that names one object and applies
// one edit: edit builds it, given the session and the object's key.
func planAndApply(e *env, g *globalOptions, args []string, namespace, key string, o writeOptions, edit func(s *cliSession, key string) (surgery.Edit, error)) error {
	return writeObject(e, g, o, args, namespace, key, func(s *cliSession, ref resource.Ref) error {
		ed, err := edit(s, ref.Key)
		if err != nil {
			return err
		}
		plan, err := s.Planner.MakePlan(e.ctx, s.Reader, ref.Key, ed)
		if err != nil {
			o.Result.Failed(ref.Key, nil, s.Options.Prefix, err)
			return err
		}
		return applyPlan(e, s, plan, o)
	})
}
