package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/klog/v2"

	"github.com/etcdpvc/etcdpvc/flows"
	"github.com/etcdpvc/etcdpvc/internal/cliargs"
	"github.com/etcdpvc/etcdpvc/internal/exitcode"
	"github.com/etcdpvc/etcdpvc/internal/textout"
	"github.com/etcdpvc/etcdpvc/session"
	"github.com/etcdpvc/etcdpvc/store/salvage"
)

// env is what a command runs with: its streams and context.
type env struct {
	ctx   context.Context
	stdin io.Reader
	// stdout and stderr escape every control character they are given
	// (textout.Escaper): a name, a value, an error quoting them reaches a
	// terminal as text. A command printing data has another stdout
	// (dataStdout).
	stdout io.Writer
	stderr io.Writer
	// rawStdout and rawStderr are the streams as given: for data, and for
	// the tool's own colours and progress line, whose text is escaped.
	rawStdout, rawStderr io.Writer
	// getenv reads the environment (os.Getenv; replaced in tests).
	getenv func(string) string
	// salvaged is the salvage report of a session opened with --salvage.
	salvaged *salvage.Report
	// prog is the program's name as help and usage lines show it:
	// "etcdpvc", or "kubectl etcdpvc" for the kubectl plugin.
	prog string
	// opID is the run's operation id (operationID); result collects the
	// records of a write command run with --result (withResult).
	opID   string
	result *flows.Result
}

// now is the time ages are measured from: ETCDPVC_NOW (RFC 3339) when set,
// for reproducible output in tests and reports, else the clock.
func (e *env) now() time.Time {
	if s := e.getenv("ETCDPVC_NOW"); s != "" {
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			return t
		}
	}
	return time.Now()
}

// globalFlag is a flag that works before or after the command name: a
// session.Setting with its help.
type globalFlag struct {
	name, alias, env, usage string
	kind                    session.Kind
	def                     string
}

// globalFlags are the connection, file and format flags every command
// accepts (session.Settings) and --nice, compatible with etcdctl's (each falls back
// to its ETCDCTL_* variable).
var globalFlags = func() []globalFlag {
	out := make([]globalFlag, 0, len(session.Settings))
	for _, s := range session.Settings {
		out = append(out, globalFlag{name: s.Name, env: s.Env, kind: s.Kind, def: s.Default, usage: globalUsage[s.Name]})
	}
	return append(out, niceFlag)
}()

// globalUsage is the help of each global flag.
var globalUsage = map[string]string{
	"endpoints":                "etcd client endpoints, comma-separated",
	"cacert":                   "verify etcd's certificate with this CA bundle",
	"cert":                     "client certificate file",
	"key":                      "client key file",
	"user":                     "etcd user[:password]",
	"password":                 "etcd password",
	"insecure-skip-tls-verify": "do not verify etcd's certificate",
	"dial-timeout":             "timeout for connecting to etcd",
	"command-timeout":          "timeout for each etcd request",
	"consistency":              "read consistency: l (linearizable) or s (serializable)",
	"prefix":                   "the kube-apiserver's --etcd-prefix",
	"etcd-servers-overrides":   "per-resource etcd servers, as the kube-apiserver's flag: group/resource#servers;servers, comma-separated (core group: /events#https://10.0.0.5:2379)",
	"kubeadm":                  "take endpoints, certificates, overrides, prefix and encryption config from the kube-apiserver static pod manifest (they win over ETCDCTL_* variables, not over flags)",
	"manifests-dir":            "where --kubeadm finds kube-apiserver.yaml",
	"node":                     "--node[=ROOT]: find the control-plane node's layout below ROOT (kubeadm, RKE2, k3s with embedded etcd, OpenShift) and take endpoints, certificates, prefix, encryption config and kubeconfig from its files, as --kubeadm does (they win over ETCDCTL_* variables, not over flags); without ROOT, / and then /host (kubectl debug node); an absolute ROOT may also follow as the next argument",
	"db":                       "read an etcd db or snapshot file instead of a live etcd, or kine's database: k3s's state.db, or its datastore's postgres:// or mysql:// URL (read-only; password from the URL, PGPASSWORD or MYSQL_PWD)",
	"wal":                      "read a member's write-ahead log (its wal dir or data dir, read-only); repeatable, one dir per member of one cluster: the logs are merged by raft index into one (each entry once, from whichever log holds it; a dir given twice is read once); with --db (the same member's db, copied before the wal, or a snapshot of it) the log's entries the db holds are worked out back from it and checked against it, the later ones replayed from its state",
	"wal-base":                 "with --wal: an older db or snapshot of the same cluster (last night's, from etcdctl snapshot save) whose consistent index lies inside the log: the log's later entries are replayed over it exactly, and --db, the member's current db, checks the replay at its own consistent index (a disagreement refuses to answer)",
	"lock-timeout":             "with --db: how long to wait for the file lock (0: do not wait)",
	"skip-hash-check":          "with --db: go on when a snapshot's sha256 trailer does not match",
	"salvage":                  "with --db: read a damaged db file bbolt refuses page by page (as the salvage command does): what survives, written to a temporary snapshot under $TMPDIR (as large as what survives; removed afterwards); reads then exit 10 unless nothing was lost",
	"encryption-config":        "the kube-apiserver's EncryptionConfiguration file, to read and write encrypted resources",
	"kubeconfig":               "kubeconfig of the cluster's apiserver, to verify writes with (--kubeadm: the node's admin.conf, which wins over $KUBECONFIG)",
	"verify":                   "check writes with the apiserver: auto (when it answers), always (refuse to write unverified) or never",
}

// cliFlag builds the flag; hidden ones parse but are not listed (each
// command's help points at `etcdpvc --help` for them instead).
func (g globalFlag) cliFlag(hidden bool) cli.Flag {
	var aliases []string
	if g.alias != "" {
		aliases = []string{g.alias}
	}
	usage := g.usage
	if g.env != "" {
		usage += " [$" + g.env + "]"
	}
	switch g.kind {
	case session.KindBool:
		return &cli.BoolFlag{Name: g.name, Aliases: aliases, Usage: usage, Category: "Global", DefaultText: g.def, Hidden: hidden}
	case session.KindList:
		return &cli.StringSliceFlag{Name: g.name, Aliases: aliases, Usage: usage, Category: "Global", DefaultText: g.def, Hidden: hidden}
	case session.KindRepeated:
		return &cli.GenericFlag{Name: g.name, Aliases: aliases, Usage: usage, Category: "Global", DefaultText: g.def, Hidden: hidden, Value: &repeatedValue{}}
	default:
		return &cli.StringFlag{Name: g.name, Aliases: aliases, Usage: usage, Category: "Global", DefaultText: g.def, Hidden: hidden}
	}
}

// repeatedValue is a session.KindRepeated flag's values: every one given,
// in order, none split (urfave/cli's StringSliceFlag splits on commas).
type repeatedValue struct{ values []string }

// Set adds v; an empty value is an error (an empty --wal would read the
// live etcd instead).
func (r *repeatedValue) Set(v string) error {
	if v == "" {
		return errors.New("must not be empty: name a directory")
	}
	r.values = append(r.values, v)
	return nil
}
func (r *repeatedValue) String() string { return strings.Join(r.values, ", ") }

// globalCLIFlags are the global flags: listed in the program's help, or
// hidden, as each command parses them without listing them in its help.
func globalCLIFlags(hidden bool) []cli.Flag {
	out := make([]cli.Flag, 0, len(globalFlags))
	for _, g := range globalFlags {
		out = append(out, g.cliFlag(hidden))
	}
	return out
}

// globalPointer ends every command's help: the global flags and the exit
// statuses are listed once, in `etcdpvc --help` and docs/cli.md.
const globalPointer = "Global flags (--endpoints, --cacert/--cert/--key, --kubeadm, --db, ...) and the exit statuses: etcdpvc --help."

// globalOptions holds the resolved global flags (session.Resolve).
type globalOptions struct {
	session.Options
	// kubeadmWarnings name each ETCDCTL_* variable the manifest overrode
	// with another value (applyKubeadm), to print once.
	kubeadmWarnings []string
}

// flagsGiven returns the global flags on the command line, before or after
// the command name (the command's own wins; a repeated one's values are
// all kept, in command-line order), as session.Resolve takes them.
func flagsGiven(c *cli.Context) map[string]string {
	m := map[string]string{}
	for _, g := range globalFlags {
		if g.kind == session.KindRepeated {
			var values []string
			lineage := c.Lineage()
			for i := len(lineage) - 1; i >= 0; i-- { // the app's first
				cc := lineage[i]
				if r, ok := cc.Generic(g.name).(*repeatedValue); ok && slices.Contains(cc.LocalFlagNames(), g.name) {
					values = append(values, r.values...)
				}
			}
			if len(values) > 0 {
				m[g.name] = session.JoinRepeated(values)
			}
			continue
		}
		for _, cc := range c.Lineage() {
			if _, done := m[g.name]; done || !slices.Contains(cc.LocalFlagNames(), g.name) {
				continue
			}
			switch g.kind {
			case session.KindBool:
				m[g.name] = fmt.Sprint(cc.Bool(g.name))
			case session.KindList:
				m[g.name] = strings.Join(cc.StringSlice(g.name), ",")
			default:
				m[g.name] = cc.String(g.name)
			}
		}
	}
	return m
}

// resolveGlobals resolves the global flags (session.Resolve): flags, then
// ETCDCTL_* variables, then defaults.
func resolveGlobals(c *cli.Context, e *env) (*globalOptions, error) {
	o, err := session.Resolve(flagsGiven(c), e.getenv)
	if err != nil {
		return nil, &usageError{Msg: err.Error()}
	}
	return &globalOptions{Options: o}, nil
}

// kubectlPlugin is the name kubectl runs the plugin `kubectl etcdpvc` by;
// kubectlCompletion the name kubectl asks for its completions (kubectl's
// plugin completion, since v1.26).
const (
	kubectlPlugin     = "kubectl-etcdpvc"
	kubectlCompletion = "kubectl_complete-etcdpvc"
)

// programName is the program's name for help, usage and completion, from
// the name it was invoked by (argv0): "kubectl etcdpvc" as the kubectl
// plugin, else "etcdpvc". complete reports an invocation as kubectl's
// completion program.
func programName(argv0 string) (prog string, complete bool) {
	switch filepath.Base(argv0) {
	case kubectlPlugin:
		return "kubectl etcdpvc", false
	case kubectlCompletion:
		return "kubectl etcdpvc", true
	}
	return "etcdpvc", false
}

// commandWord is the program's name where help text shows a command line:
// at the start of a line, after a space, a backquote or a parenthesis.
var commandWord = regexp.MustCompile("(^|[\\s`(])etcdpvc( |$)")

// named is help text s with its command lines naming the program as
// invoked (e.prog).
func (e *env) named(s string) string {
	if e.prog == "" || e.prog == "etcdpvc" {
		return s
	}
	return commandWord.ReplaceAllString(s, "${1}"+e.prog+"${2}")
}

// command is one etcdpvc command, declared once: its help, its flags, what
// arguments it takes and how they complete, and its action.
type command struct {
	name      string
	usage     string
	argsUsage string
	desc      string
	examples  string
	flags     []cli.Flag
	// args declares the positional arguments; an object command gets the
	// object flags (-n/--namespace, --etcd-key) from it.
	args cliargs.Args
	// noGlobals: the action does not use the global flags, which are
	// then not resolved (a bad $ETCDCTL_* variable does not stop it).
	noGlobals bool
	// values names what completes the values of some flags.
	values map[string]cliargs.Offer
	action func(c *cli.Context, e *env, in *input) error
	hidden bool
	// data: the command prints data on stdout whatever its flags
	// (dataStdout).
	data bool
}

// input is what an action receives: the resolved global flags and, for an
// object command, the object its arguments name.
type input struct {
	// g holds the resolved global flags (nil with noGlobals).
	g *globalOptions
	// obj is RESOURCE NAME or RESOURCE/NAME (nil with --etcd-key).
	obj []string
	// rest are the arguments after the object.
	rest []string
	// namespace and key are -n and --etcd-key.
	namespace, key string

	cmd *command
	c   *cli.Context
}

// commands lists every command, in help order, as declared.
func commands() []command {
	cmds := []command{
		getCommand(),
		lsCommand(),
		historyCommand(),
		watchCommand(),
		diffCommand(),
		doctorCommand(),
		undeleteCommand(),
		finalizersCommand(),
		labelCommand(false),
		labelCommand(true),
		patchCommand(),
		editCommand(),
		resizeRecoverCommand(),
		rebindCommand(),
		restoreCommand(),
		backupsCommand(),
		deleteCommand(),
		recoverCommand(),
		dumpCommand(),
		statsCommand(),
		spaceCommand(),
		reportCommand(),
		salvageCommand(),
		snapshotCommand(),
		decodeCommand(),
		encodeCommand(),
		versionCommand(),
		demoCommand(),
		completionCommand(),
		completeCommand(),
		genDocsCommand(),
	}
	for i := range cmds {
		cmds[i] = cmds[i].declared()
	}
	return cmds
}

// declared completes a command from its argument declaration: an object
// command's flags start with the object flags, and its synopsis defaults
// to the object forms.
func (cmd command) declared() command {
	if cmd.args.Kind != cliargs.ArgsObject {
		return cmd
	}
	if cmd.argsUsage == "" {
		cmd.argsUsage = "RESOURCE NAME | RESOURCE/NAME | --etcd-key KEY"
	}
	if !cmd.args.Bare {
		cmd.flags = append(objectFlags(), cmd.flags...)
	}
	return cmd
}

// dataStdout returns the stdout of a command printing data, or nil for
// text: -o json or jsonl and --result json get JSON's escapes of what
// terminals take as controls (textout.NewJSONEscaper: the same strings);
// -o yaml and --result yaml print as they are, YAML quoting control
// characters itself, as do -o raw (the stored bytes asked for) and a
// command whose output is always data (encode).
func (cmd *command) dataStdout(c *cli.Context, e *env) io.Writer {
	out, result := c.String("output"), c.String("result")
	switch {
	case out == "json" || out == "jsonl" || result == "json":
		return textout.NewJSONEscaper(e.rawStdout)
	case cmd.data || out == "yaml" || out == "raw" || result == "yaml":
		return e.rawStdout
	}
	return nil
}

// run checks the arguments against the declaration, resolves the global
// flags and runs the action.
func (cmd *command) run(c *cli.Context, e *env) error {
	in := &input{cmd: cmd, c: c}
	switch {
	case cmd.args.Kind == cliargs.ArgsObject && !cmd.args.OtherForms:
		if err := in.object(); err != nil {
			return err
		}
	case cmd.args.Kind == cliargs.ArgsCount:
		if err := cmd.args.CheckCount(cmd.name, c.NArg()); err != nil {
			return err
		}
	}
	if err := checkNamespace(c); err != nil {
		return err
	}
	if !cmd.noGlobals {
		g, err := resolveGlobals(c, e)
		if err != nil {
			return err
		}
		in.g = g
		memberFiles := cmd.name == "diff" && c.Bool("members") && c.NArg() >= 2
		e.lowerPriorityIf(niceWanted(flagsGiven(c), &g.Options, memberFiles))
	}
	if w := cmd.dataStdout(c, e); w != nil {
		de := *e
		de.stdout = w
		e = &de
		if esc, ok := w.(*textout.Escaper); ok {
			defer esc.Flush()
		}
	}
	err := withResult(c, e, func(e *env) error {
		err := cmd.action(c, e, in)
		if in.g != nil {
			err = flows.SessionHint(err, in.g.Options)
		}
		return err
	})
	if err == nil && e.salvaged != nil {
		// What was read is what survives of the file.
		err = flows.SalvageVerdict(e.salvaged)
	}
	return err
}

func newApp(e *env) *cli.App {
	app := &cli.App{
		Name:            e.prog,
		HelpName:        e.prog,
		Usage:           "break-glass surgery on Kubernetes objects stored in etcd",
		Flags:           globalCLIFlags(false),
		Writer:          e.stdout,
		ErrWriter:       e.stderr,
		HideHelpCommand: false,
		ExitErrHandler:  func(*cli.Context, error) {},
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return flagUsageError(err, c.App.Flags)
		},
		Description: e.named("etcdpvc reads, and edits with a diff, a durable backup and a compare-and-swap,\n" +
			"the objects kube-apiserver stores in etcd, and reads etcd db and snapshot files offline.\n" +
			"Text output and messages show what a terminal would take as a control, wherever it is stored\n" +
			"(a name, a value), escaped: ESC as \\x1b, a right-to-left override as \\u202e. -o json writes\n" +
			"such characters as JSON escapes (the same strings); -o yaml quotes the control characters as\n" +
			"YAML does (\\e); -o raw writes the bytes as stored.\n\n" + exitStatusHelp),
	}
	for _, cmd := range commands() {
		desc := cmd.desc
		if cmd.examples != "" {
			desc += "\n\nEXAMPLES:\n" + indent(strings.TrimSpace(cmd.examples), "   ")
		}
		desc += "\n\n" + globalPointer
		app.Commands = append(app.Commands, &cli.Command{
			Name:        cmd.name,
			Usage:       cmd.usage,
			ArgsUsage:   cmd.argsUsage,
			Description: e.named(strings.TrimSpace(desc)),
			Flags:       append(append([]cli.Flag{}, cmd.flags...), globalCLIFlags(true)...),
			Hidden:      cmd.hidden,
			Action:      func(c *cli.Context) error { return cmd.run(c, e) },
			OnUsageError: func(c *cli.Context, err error, _ bool) error {
				return flagUsageError(err, c.Command.Flags)
			},
			Before: checkRevision,
		})
	}
	return app
}

func indent(s, prefix string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "\n")
}

// run is the whole program: it parses args, runs one command and returns the
// exit status. Only main exits.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runAs(ctx, "etcdpvc", args, stdin, stdout, stderr)
}

// runAs is run for the program invoked as argv0: as kubectl-etcdpvc (a
// kubectl plugin) its help and usage name it `kubectl etcdpvc`; as
// kubectl_complete-etcdpvc it answers kubectl's plugin completion.
func runAs(ctx context.Context, argv0 string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	prog, kubectlComplete := programName(argv0)
	if kubectlComplete {
		args = append([]string{"__complete", "--kubectl", "--", prog}, args...)
	}
	quietKlog()
	out, errOut := textout.NewEscaper(stdout), textout.NewEscaper(stderr)
	defer errOut.Flush()
	defer out.Flush()
	e := &env{ctx: ctx, stdin: stdin, stdout: out, stderr: errOut, rawStdout: stdout, rawStderr: stderr, getenv: os.Getenv, prog: prog}
	app := newApp(e)
	if len(args) == 1 && args[0] == "--version" {
		args = []string{"version"} // the same words as `etcdpvc version`
	}
	reordered, err := reorderArgs(commands(), args)
	if err != nil {
		return report(errOut, err)
	}
	argv := append([]string{"etcdpvc"}, reordered...)
	if err := app.RunContext(ctx, argv); err != nil {
		if m := noHelpTopic.FindStringSubmatch(err.Error()); m != nil {
			err = unknownCommand(app, m[1])
		}
		if isFlagError(err) {
			err = &usageError{Msg: err.Error()}
		}
		return report(errOut, err)
	}
	return exitcode.OK
}

// checkNamespace refuses a -n that cannot name a namespace, as the
// apiserver validates one (apimachinery's ValidateNamespaceName, a
// DNS-1123 label), for every command that has -n: a typo is an error,
// not a listing of nothing.
func checkNamespace(c *cli.Context) error {
	ns := c.String("namespace")
	if ns == "" {
		return nil
	}
	if errs := apivalidation.ValidateNamespaceName(ns, false); len(errs) > 0 {
		return usagef("-n %q: not a valid namespace name: %s", ns, strings.Join(errs, "; "))
	}
	return nil
}

// checkRevision rejects a negative --rev, for every command that has one.
func checkRevision(c *cli.Context) error {
	for _, f := range c.Command.Flags {
		if _, ok := f.(*cli.Int64Flag); ok && f.Names()[0] == "rev" && c.IsSet("rev") && c.Int64("rev") < 0 {
			return usagef("--rev %d: a revision is a positive number (0 or no --rev: the latest)", c.Int64("rev"))
		}
	}
	return nil
}

// noHelpTopic matches urfave/cli's error for an unknown command name.
var noHelpTopic = regexp.MustCompile(`^No help topic for '(.*)'$`)

// quietKlog stops the apiserver libraries' klog output (failed decryption
// attempts, KMS probes) from mixing with the tool's own messages; errors
// reach the user through return values.
func quietKlog() {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	klog.SetOutput(io.Discard)
}

// isFlagError recognises urfave/cli's and the flag package's parse errors.
func isFlagError(err error) bool {
	var u *usageError
	if errors.As(err, &u) {
		return false
	}
	s := err.Error()
	for _, p := range []string{"flag provided but not defined", "flag needs an argument", "invalid value", "No help topic", "Required flag", "invalid boolean"} {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}
