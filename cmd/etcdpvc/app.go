package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"k8s.io/klog/v2"

	"github.com/etcdpvc/etcdpvc/connect"
	"github.com/etcdpvc/etcdpvc/kubeadm"
	"github.com/etcdpvc/etcdpvc/verify"
)

// env is what a command runs with: its streams and context.
type env struct {
	ctx    context.Context
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	// getenv reads the environment (os.Getenv; replaced in tests).
	getenv func(string) string
}

// globalFlag describes a flag that works before or after the command name.
type globalFlag struct {
	name, alias, env, usage string
	kind                    byte // 's' string, 'b' bool, 'd' duration, 'l' string list
	def                     string
}

// globalFlags are the connection, file and format flags every command
// accepts, compatible with etcdctl's (each falls back to its ETCDCTL_*
// variable).
var globalFlags = []globalFlag{
	{name: "endpoints", env: "ETCDCTL_ENDPOINTS", kind: 'l', def: "127.0.0.1:2379", usage: "etcd client endpoints, comma-separated"},
	{name: "cacert", env: "ETCDCTL_CACERT", kind: 's', usage: "verify etcd's certificate with this CA bundle"},
	{name: "cert", env: "ETCDCTL_CERT", kind: 's', usage: "client certificate file"},
	{name: "key", env: "ETCDCTL_KEY", kind: 's', usage: "client key file"},
	{name: "user", env: "ETCDCTL_USER", kind: 's', usage: "etcd user[:password]"},
	{name: "password", env: "ETCDCTL_PASSWORD", kind: 's', usage: "etcd password"},
	{name: "insecure-skip-tls-verify", env: "ETCDCTL_INSECURE_SKIP_TLS_VERIFY", kind: 'b', usage: "do not verify etcd's certificate"},
	{name: "dial-timeout", env: "ETCDCTL_DIAL_TIMEOUT", kind: 'd', def: "2s", usage: "timeout for connecting to etcd"},
	{name: "command-timeout", env: "ETCDCTL_COMMAND_TIMEOUT", kind: 'd', def: "5s", usage: "timeout for each etcd request"},
	{name: "consistency", kind: 's', def: "l", usage: "read consistency: l (linearizable) or s (serializable)"},
	{name: "prefix", kind: 's', def: "/registry", usage: "the kube-apiserver's --etcd-prefix"},
	{name: "etcd-servers-overrides", kind: 's', usage: "per-resource etcd servers, as the kube-apiserver's flag: group/resource#servers;servers, comma-separated (core group: /events#https://10.0.0.5:2379)"},
	{name: "kubeadm", kind: 'b', usage: "take endpoints, certificates, overrides, prefix and encryption config from the kube-apiserver static pod manifest (they win over ETCDCTL_* variables, not over flags)"},
	{name: "manifests-dir", kind: 's', def: "/etc/kubernetes/manifests", usage: "where --kubeadm finds kube-apiserver.yaml"},
	{name: "db", kind: 's', usage: "read an etcd db or snapshot file instead of a live etcd"},
	{name: "wal", kind: 's', usage: "read a member's write-ahead log (its wal dir or data dir, read-only); with --db (the same member's db or a snapshot of it) replayed from the db's state"},
	{name: "lock-timeout", kind: 'd', def: "2s", usage: "with --db: how long to wait for the file lock (0: do not wait)"},
	{name: "skip-hash-check", kind: 'b', usage: "with --db: go on when a snapshot's sha256 trailer does not match"},
	{name: "encryption-config", kind: 's', usage: "the kube-apiserver's EncryptionConfiguration file, to read and write encrypted resources"},
	{name: "kubeconfig", env: "KUBECONFIG", kind: 's', usage: "kubeconfig of the cluster's apiserver, to verify writes with (--kubeadm: the node's admin.conf, which wins over $KUBECONFIG)"},
	{name: "verify", kind: 's', def: "auto", usage: "check writes with the apiserver: auto (when it answers), always (refuse to write unverified) or never"},
}

func (g globalFlag) flag() cli.Flag { return g.cliFlag(false) }

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
	case 'b':
		return &cli.BoolFlag{Name: g.name, Aliases: aliases, Usage: usage, Category: "Global", Hidden: hidden}
	case 'l':
		return &cli.StringSliceFlag{Name: g.name, Aliases: aliases, Usage: usage, Category: "Global", DefaultText: g.def, Hidden: hidden}
	default:
		return &cli.StringFlag{Name: g.name, Aliases: aliases, Usage: usage, Category: "Global", DefaultText: g.def, Hidden: hidden}
	}
}

func globalCLIFlags() []cli.Flag {
	out := make([]cli.Flag, 0, len(globalFlags))
	for _, g := range globalFlags {
		out = append(out, g.flag())
	}
	return out
}

// hiddenGlobalFlags are the global flags as each command parses them,
// without listing them in its help.
func hiddenGlobalFlags() []cli.Flag {
	out := make([]cli.Flag, 0, len(globalFlags))
	for _, g := range globalFlags {
		out = append(out, g.cliFlag(true))
	}
	return out
}

// globalPointer ends every command's help: the global flags and the exit
// statuses are listed once, in `etcdpvc --help` and docs/cli.md.
const globalPointer = "Global flags (--endpoints, --cacert/--cert/--key, --kubeadm, --db, ...) and the exit statuses: etcdpvc --help."

// globalOptions holds the resolved global flags.
type globalOptions struct {
	Endpoints             []string
	CACert, Cert, Key     string
	User, Password        string
	InsecureSkipTLSVerify bool
	DialTimeout           time.Duration
	CommandTimeout        time.Duration
	Consistency           string
	Prefix                string
	Kubeadm               bool
	ManifestsDir          string
	DB                    string
	WAL                   string
	LockTimeout           time.Duration
	SkipHashCheck         bool
	EncryptionConfig      string
	Kubeconfig            string
	Verify                verify.Mode
	// ServersOverrides are --etcd-servers-overrides, parsed.
	ServersOverrides []kubeadm.Override
	// explicit records which flags the user set (flag or environment).
	explicit map[string]bool
	// fromEnv records, for the flags set only by their ETCDCTL_* variable,
	// the variable's value: --kubeadm wins over those, not over flags.
	fromEnv map[string]string
	// kubeadmApplied is set once the manifest has been read.
	kubeadmApplied bool
	// kubeadmWarnings name each ETCDCTL_* variable the manifest overrode
	// with another value.
	kubeadmWarnings []string
}

// lookupGlobal finds a global flag's value: set on the command, else set
// before the command, else its environment variable, else its default.
func lookupGlobal(c *cli.Context, e *env, g globalFlag) (string, []string, bool) {
	for _, cc := range c.Lineage() {
		for _, n := range cc.LocalFlagNames() {
			if n == g.name {
				switch g.kind {
				case 'b':
					return fmt.Sprint(cc.Bool(g.name)), nil, true
				case 'l':
					return "", splitList(cc.StringSlice(g.name)), true
				default:
					return cc.String(g.name), nil, true
				}
			}
		}
	}
	if v := envValue(e, g); v != "" {
		return v, splitList([]string{v}), true
	}
	return g.def, splitList([]string{g.def}), false
}

// envValue is g's ETCDCTL_* variable, or "".
func envValue(e *env, g globalFlag) string {
	if g.env == "" {
		return ""
	}
	return e.getenv(g.env)
}

// flagGiven reports whether the flag name is on the command line (before
// or after the command name).
func flagGiven(c *cli.Context, name string) bool {
	for _, cc := range c.Lineage() {
		for _, n := range cc.LocalFlagNames() {
			if n == name {
				return true
			}
		}
	}
	return false
}

// splitList splits comma-separated values, dropping empty ones
// (connect.SplitList).
func splitList(vs []string) []string { return connect.SplitList(vs) }

func resolveGlobals(c *cli.Context, e *env) (*globalOptions, error) {
	o := &globalOptions{explicit: map[string]bool{}, fromEnv: map[string]string{}}
	for _, g := range globalFlags {
		s, list, set := lookupGlobal(c, e, g)
		if set {
			o.explicit[g.name] = true
			if !flagGiven(c, g.name) {
				o.fromEnv[g.name] = envValue(e, g)
			}
		}
		if g.name == "endpoints" && set && len(list) == 0 {
			return nil, usagef("--endpoints is empty: give etcd's client URLs (https://10.0.0.2:2379), or leave it out for 127.0.0.1:2379")
		}
		if err := o.set(g.name, s, list); err != nil {
			return nil, err
		}
	}
	o.splitUser()
	return o, nil
}

// splitUser splits --user user:password on the first colon, as etcdctl
// does, unless --password (or $ETCDCTL_PASSWORD) is given: then --user is
// the whole user name.
func (o *globalOptions) splitUser() {
	if o.explicit["password"] {
		return
	}
	if u, p, ok := strings.Cut(o.User, ":"); ok {
		o.User, o.Password = u, p
	}
}

// set stores one global flag's value (s, or list for --endpoints).
func (o *globalOptions) set(name, s string, list []string) error {
	var err error
	switch name {
	case "endpoints":
		o.Endpoints = list
	case "cacert":
		o.CACert = s
	case "cert":
		o.Cert = s
	case "key":
		o.Key = s
	case "user":
		o.User = s
	case "password":
		o.Password = s
	case "insecure-skip-tls-verify":
		o.InsecureSkipTLSVerify = s == "true"
	case "dial-timeout":
		o.DialTimeout, err = parseDuration(s)
	case "command-timeout":
		o.CommandTimeout, err = parseDuration(s)
	case "consistency":
		o.Consistency = s
		if s != "l" && s != "s" {
			err = fmt.Errorf("must be l or s")
		}
	case "prefix":
		o.Prefix = "/" + strings.Trim(s, "/")
	case "kubeadm":
		o.Kubeadm = s == "true"
	case "manifests-dir":
		o.ManifestsDir = s
	case "db":
		o.DB = s
	case "wal":
		o.WAL = s
	case "lock-timeout":
		o.LockTimeout, err = parseDuration(s)
	case "skip-hash-check":
		o.SkipHashCheck = s == "true"
	case "encryption-config":
		o.EncryptionConfig = s
	case "kubeconfig":
		o.Kubeconfig = s
	case "verify":
		if o.Verify, err = verify.ParseMode(s); err != nil {
			return usagef("%v", err)
		}
	case "etcd-servers-overrides":
		if o.ServersOverrides, err = kubeadm.ParseServersOverrides(s); err != nil {
			return usagef("--etcd-servers-overrides: %v", err)
		}
	}
	if err != nil {
		return usagef("--%s %q: %v", name, s, err)
	}
	return nil
}

// parseDuration parses a duration that must not be negative.
func parseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err == nil && d < 0 {
		err = fmt.Errorf("must not be negative")
	}
	return d, err
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
	args argSpec
	// noGlobals: the action does not use the global flags, which are
	// then not resolved (a bad $ETCDCTL_* variable does not stop it).
	noGlobals bool
	// values names what completes the values of some flags.
	values map[string]completer
	action func(c *cli.Context, e *env, in *input) error
	hidden bool
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
		recoverCommand(),
		dumpCommand(),
		statsCommand(),
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
	if cmd.args.kind != argObject {
		return cmd
	}
	if cmd.argsUsage == "" {
		cmd.argsUsage = "RESOURCE NAME | RESOURCE/NAME | --etcd-key KEY"
	}
	if !cmd.args.bare {
		cmd.flags = append(objectFlags(), cmd.flags...)
	}
	return cmd
}

// run checks the arguments against the declaration, resolves the global
// flags and runs the action.
func (cmd *command) run(c *cli.Context, e *env) error {
	in := &input{cmd: cmd, c: c}
	switch {
	case cmd.args.kind == argObject && !cmd.args.otherForms:
		if err := in.object(); err != nil {
			return err
		}
	case cmd.args.kind == argCount:
		if err := cmd.args.checkCount(cmd.name, c.NArg()); err != nil {
			return err
		}
	}
	if !cmd.noGlobals {
		g, err := resolveGlobals(c, e)
		if err != nil {
			return err
		}
		in.g = g
	}
	return cmd.action(c, e, in)
}

func newApp(e *env) *cli.App {
	app := &cli.App{
		Name:            "etcdpvc",
		Usage:           "break-glass surgery on Kubernetes objects stored in etcd",
		Flags:           globalCLIFlags(),
		Writer:          e.stdout,
		ErrWriter:       e.stderr,
		HideHelpCommand: false,
		ExitErrHandler:  func(*cli.Context, error) {},
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return flagUsageError(err, c.App.Flags)
		},
		Description: "etcdpvc reads, and edits with a diff, a durable backup and a compare-and-swap,\n" +
			"the objects kube-apiserver stores in etcd, and reads etcd db and snapshot files offline.\n\n" + exitStatusHelp,
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
			Description: strings.TrimSpace(desc),
			Flags:       append(append([]cli.Flag{}, cmd.flags...), hiddenGlobalFlags()...),
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
	quietKlog()
	e := &env{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr, getenv: os.Getenv}
	app := newApp(e)
	reordered, err := reorderArgs(commands(), args)
	if err != nil {
		return report(stderr, err)
	}
	argv := append([]string{"etcdpvc"}, reordered...)
	if err := app.RunContext(ctx, argv); err != nil {
		if m := noHelpTopic.FindStringSubmatch(err.Error()); m != nil {
			err = unknownCommand(app, m[1])
		}
		if isFlagError(err) {
			err = &usageError{msg: err.Error()}
		}
		return report(stderr, err)
	}
	return exitOK
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
