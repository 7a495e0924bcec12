package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/sys/unix"
)

// Faults of a three-member etcd that etcdpvc's writes meet: a frozen
// leader holding a write whose answer was lost, and a member that
// diverged. etcd runs alone (no kube-apiserver: --verify=never).

const (
	cmKey = "/registry/configmaps/demo/web-config"
	nsKey = "/registry/namespaces/demo"
)

// corpusValue is a stored value of the repository's fixture corpus.
func corpusValue(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "fixtures", "corpus", "plain", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// leader is the member that leads, as the members say.
func (c *Cluster) leader(t *testing.T) *EtcdMember {
	t.Helper()
	var found *EtcdMember
	eventually(t, "find the leader", func() error {
		for _, m := range c.Members {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			st, err := c.Etcd.Status(ctx, m.ClientURL)
			cancel()
			if err == nil && st.Header.MemberId == st.Leader {
				found = m
				return nil
			}
		}
		return errors.New("no member says it leads")
	})
	return found
}

// others are the client URLs of every member but m, comma-separated.
func (c *Cluster) others(m *EtcdMember) string {
	var urls []string
	for _, o := range c.Members {
		if o != m {
			urls = append(urls, o.ClientURL)
		}
	}
	return strings.Join(urls, ",")
}

// freeze stops m's process (SIGSTOP) until the returned thaw is called
// (SIGCONT), at the latest when the test ends.
func freeze(t *testing.T, m *EtcdMember) (thaw func()) {
	t.Helper()
	pid := m.proc.cmd.Process.Pid
	if err := syscall.Kill(-pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	thaw = func() { once.Do(func() { _ = syscall.Kill(-pid, syscall.SIGCONT) }) }
	t.Cleanup(thaw)
	return thaw
}

// memberGet reads key on member m alone (serializably): nil when absent.
func (c *Cluster) memberGet(t *testing.T, m *EtcdMember, key string) *mvccKV {
	t.Helper()
	cli := c.memberClient(t, m)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, key, clientv3.WithSerializable())
	if err != nil {
		t.Fatalf("get %s on %s: %v", key, m.Name, err)
	}
	if len(resp.Kvs) == 0 {
		return nil
	}
	kv := resp.Kvs[0]
	return &mvccKV{Key: string(kv.Key), Value: kv.Value, ModRevision: kv.ModRevision, CreateRevision: kv.CreateRevision, Version: kv.Version}
}

// settled waits until every member answers and holds key alike, and
// returns what they hold (nil: absent).
func (c *Cluster) settled(t *testing.T, key string) *mvccKV {
	t.Helper()
	var kv *mvccKV
	eventually(t, "the members agree on "+key, func() error {
		var states []string
		for i, m := range c.Members {
			got := c.memberGet(t, m, key)
			if i == 0 {
				kv = got
			}
			s := "absent"
			if got != nil {
				s = fmt.Sprintf("revision %d %x", got.ModRevision, got.Value)
			}
			states = append(states, s)
			if states[i] != states[0] {
				return fmt.Errorf("%s holds %.40s, %s %.40s", m.Name, s, c.Members[0].Name, states[0])
			}
		}
		return nil
	})
	return kv
}

// put writes key through every member's client.
func (c *Cluster) put(t *testing.T, key string, value []byte) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.Etcd.Put(ctx, key, string(value))
	if err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
	return resp.Header.Revision
}

// ptyRun is etcdpvc running on a pseudo-terminal, as an operator runs it:
// it asks before it writes, and the test answers.
type ptyRun struct {
	t      *testing.T
	cmd    *exec.Cmd
	master *os.File
	mu     sync.Mutex
	out    bytes.Buffer
	done   chan error
	read   chan struct{}
}

// onPTY starts etcdpvc with args on a new pseudo-terminal.
func onPTY(t *testing.T, args ...string) *ptyRun {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open /dev/ptmx: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(suite.etcdpvc, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = s, s, s
	cmd.Env = append(cleanEnv(), "XDG_STATE_HOME="+t.TempDir(), "NO_COLOR=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	r := &ptyRun{t: t, cmd: cmd, master: m, done: make(chan error, 1), read: make(chan struct{})}
	go func() {
		defer close(r.read)
		buf := make([]byte, 4096)
		for {
			n, err := m.Read(buf)
			r.mu.Lock()
			r.out.Write(buf[:n])
			r.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	go func() { r.done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); m.Close() })
	return r
}

func (r *ptyRun) output() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.String()
}

// waitFor waits until the terminal shows text.
func (r *ptyRun) waitFor(text string) {
	r.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(r.output(), text) {
		if time.Now().After(deadline) {
			r.t.Fatalf("the terminal never showed %q; it shows:\n%s", text, r.output())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// exitCode waits for etcdpvc to end.
func (r *ptyRun) exitCode() int {
	r.t.Helper()
	select {
	case err := <-r.done:
		<-r.read
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			r.t.Fatal(err)
		}
		return 0
	case <-time.After(2 * time.Minute):
		r.t.Fatalf("etcdpvc did not end; the terminal shows:\n%s", r.output())
		return -1
	}
}

// cleanEnv is the environment without ETCDCTL_*, editor and state
// settings.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "ETCDCTL_"), name == "XDG_STATE_HOME", name == "EDITOR", name == "KUBE_EDITOR":
		default:
			env = append(env, kv)
		}
	}
	return env
}

// pasted runs a line etcdpvc printed in a new shell, as an operator
// pastes it, with --yes (it would ask) and --verify=never (no apiserver).
func pasted(t *testing.T, line string) result {
	t.Helper()
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "etcdpvc ") {
		t.Fatalf("not an etcdpvc command line: %q", line)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", line+" --yes --verify=never")
	cmd.Env = append(cleanEnv(), "PATH="+filepath.Dir(suite.etcdpvc)+":"+os.Getenv("PATH"), "XDG_STATE_HOME="+t.TempDir(), "NO_COLOR=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{args: []string{"(sh -c)", line}, stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return r
}

// auditLine is what the tests read of an audit.log line.
type auditLine struct {
	OperationID string `json:"operationID"`
	Key         string `json:"key"`
	Outcome     string `json:"outcome"`
	Backup      string `json:"backup"`
	Restore     string `json:"restore"`
	Settles     string `json:"settles"`
	ToRevision  int64  `json:"toRevision"`
}

// auditLines reads dir/audit.log.
func auditLines(t *testing.T, dir string) []auditLine {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []auditLine
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l auditLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("audit.log line %q: %v", sc.Text(), err)
		}
		out = append(out, l)
	}
	return out
}

// lastUncertain is the last uncertain line of dir's audit.log.
func lastUncertain(t *testing.T, dir string) auditLine {
	t.Helper()
	lines := auditLines(t, dir)
	for i := len(lines) - 1; i >= 0; i-- {
		if lines[i].Outcome == "uncertain" {
			return lines[i]
		}
	}
	t.Fatalf("no uncertain line in %s/audit.log: %+v", dir, lines)
	return auditLine{}
}

// sameOperations checks that audit.log and the backups of dir name the
// same operations.
func sameOperations(t *testing.T, dir string) {
	t.Helper()
	inLog := map[string]bool{}
	for _, l := range auditLines(t, dir) {
		if l.Backup != "" {
			inLog[l.OperationID] = true
		}
	}
	inBackups := map[string]bool{}
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			OperationID string `json:"operationID"`
		}
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("backup %s: %v", f, err)
		}
		inBackups[v.OperationID] = true
	}
	keys := func(m map[string]bool) []string {
		var s []string
		for k := range m {
			s = append(s, k)
		}
		sort.Strings(s)
		return s
	}
	if a, b := keys(inLog), keys(inBackups); strings.Join(a, " ") != strings.Join(b, " ") {
		t.Errorf("audit.log names operations %v, the backups %v", a, b)
	}
}

// undoLines are the "undo with:" lines of an output.
func undoLines(out string) []string {
	return regexp.MustCompile(`(?m)^undo with: (.*)$`).FindAllString(out, -1)
}

// uncertainWrite runs args on a terminal through the leader alone,
// freezes the leader at the question, answers it, and expects exit 8 (the
// transaction's answer lost, and the retries and fences sent to the
// frozen leader too). It returns the leader and its thaw.
func (c *Cluster) uncertainWrite(t *testing.T, dir string, args ...string) (*EtcdMember, func()) {
	t.Helper()
	l := c.leader(t)
	run := onPTY(t, append([]string{"--endpoints", l.ClientURL, "--command-timeout", "2s", "--verify=never", "--backup-dir", dir}, args...)...)
	run.waitFor("[y/N]")
	thaw := freeze(t, l)
	if _, err := run.master.Write([]byte("y\n")); err != nil {
		t.Fatal(err)
	}
	if code := run.exitCode(); code != 8 {
		t.Fatalf("%v through the frozen leader: exit status %d, want 8 (outcome unknown):\n%s", args, code, run.output())
	}
	return l, thaw
}

// TestUndoOfUncertainWrites: a label and a recover sent to a leader that
// freezes (SIGSTOP) as they are confirmed exit 8, outcome unknown. Their
// undo through the two other members must not call them "nothing to
// do": the update is fenced (the key rewritten with its own bytes, so the
// lost compare-and-swap can never apply), and the create, which no fence
// can stop, is refused with exit 8 naming the member that may hold it.
// The leader resumed, the key holds what the undo said, on every member,
// and every undo line printed works pasted into a new shell.
func TestUndoOfUncertainWrites(t *testing.T) {
	c := startCluster(t, "uncertain", ClusterOptions{EtcdMembers: 3, EtcdOnly: true})
	c.put(t, nsKey, corpusValue(t, "namespaces__-__demo.bin"))
	original := corpusValue(t, "configmaps__demo__web-config.bin")
	c.put(t, cmKey, original)
	dir := t.TempDir()

	t.Run("update", func(t *testing.T) {
		before := c.settled(t, cmKey)
		l, thaw := c.uncertainWrite(t, dir, "label", "cm", "web-config", "-n", "demo", "lost=yes")
		line := lastUncertain(t, dir)

		// The undo through the others: the key still holds the backup's
		// value, and the write may still apply: fenced.
		r := runEtcdpvc(t, nil, "--endpoints", c.others(l), "--verify=never", "restore", line.Backup, "--yes")
		if r.code != 0 || !strings.Contains(r.stderr, "unknown outcome") || !strings.Contains(r.stdout, "written: ") {
			t.Fatalf("restore of a write of unknown outcome whose key holds the backup's value: want it fenced (exit 0, written):\n%s", r)
		}
		fenced := c.memberGet(t, c.Members[indexOther(c, l)], cmKey)
		if fenced == nil || !bytes.Equal(fenced.Value, original) || fenced.ModRevision <= before.ModRevision {
			t.Fatalf("after the fence the key holds %+v, want its own bytes at a revision past %d", fenced, before.ModRevision)
		}

		thaw()
		time.Sleep(2 * time.Second) // what the resumed leader held, it has sent by now
		final := c.settled(t, cmKey)
		if !bytes.Equal(final.Value, original) {
			t.Fatalf("the leader resumed, the lost label applied after its undo: the key holds %q", final.Value)
		}
		// The undo lines, pasted after the fault: the write's own and the
		// fence's.
		for _, undo := range append([]string{line.Restore}, undoLinesOf(r.stdout)...) {
			p := pasted(t, undo)
			if p.code != 0 || !strings.Contains(p.stderr+p.stdout, "nothing to do") {
				t.Errorf("pasted undo line after the fault: want exit 0, nothing to do:\n%s", p)
			}
		}
		if got := c.settled(t, cmKey); !bytes.Equal(got.Value, original) || got.ModRevision != final.ModRevision {
			t.Errorf("the pasted undo lines wrote: %+v", got)
		}
		sameOperations(t, dir)
	})

	t.Run("create", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := c.Etcd.Delete(ctx, cmKey); err != nil {
			t.Fatal(err)
		}
		l, thaw := c.uncertainWrite(t, dir, "recover", "cm", "web-config", "-n", "demo")
		line := lastUncertain(t, dir)
		undo := fmt.Sprintf("etcdpvc restore --operation %s --backup-dir %s", line.OperationID, dir)

		// The undo through the others: the key is absent, and the create
		// may still land through the frozen leader: exit 8, nothing
		// written, naming it and how to know when it no longer can.
		r := runEtcdpvc(t, nil, "--endpoints", c.others(l), "--verify=never", "restore", "--operation", line.OperationID, "--backup-dir", dir, "--yes")
		if r.code != 8 || !strings.Contains(r.stderr, "cannot be fenced off") || !strings.Contains(r.stderr, l.Name) || !strings.Contains(r.stderr, "restarted or answers") {
			t.Fatalf("restore of a create of unknown outcome, its key absent, a member silent: want exit 8 naming %s:\n%s", l.Name, r)
		}
		if strings.Contains(r.stdout, "undo with:") {
			t.Errorf("a refused restore printed an undo line:\n%s", r)
		}

		thaw()
		eventually(t, l.Name+" answers", func() error {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_, err := c.Etcd.Status(ctx, l.ClientURL)
			return err
		})
		time.Sleep(2 * time.Second) // what the resumed leader held, it has sent by now
		c.settled(t, cmKey)
		// The undo line, pasted after the fault: it deletes what the
		// create made, or finds it never landed.
		p := pasted(t, undo)
		if p.code != 0 {
			t.Fatalf("pasted undo line after the fault: want exit 0:\n%s", p)
		}
		if kv := c.settled(t, cmKey); kv != nil {
			t.Fatalf("after the undo the key is at revision %d, want it absent:\n%s", kv.ModRevision, p)
		}
		for _, u := range undoLinesOf(p.stdout) {
			if q := pasted(t, u); q.code != 0 {
				t.Errorf("the undo's own undo line: want exit 0:\n%s", q)
			}
		}
		sameOperations(t, dir)
	})
}

// indexOther is the index of a member other than m.
func indexOther(c *Cluster, m *EtcdMember) int {
	for i, o := range c.Members {
		if o != m {
			return i
		}
	}
	return -1
}

// undoLinesOf returns the commands of the "undo with:" lines of out.
func undoLinesOf(out string) []string {
	var cmds []string
	for _, l := range undoLines(out) {
		cmds = append(cmds, strings.TrimPrefix(l, "undo with: "))
	}
	return cmds
}

// argValue is the value of flag in args.
func argValue(args []string, flag string) string {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// divergeMember makes m diverge as a member restored from an old
// snapshot does: stopped, its db replaced with snapshot snap restored by
// etcdutl (same name, cluster and token: the same ids), its write-ahead
// log kept, and started again with the same data-dir layout. It replays
// the log over the snapshot's state, and holds another state than the
// others (every put applied twice: other revisions).
func (c *Cluster) divergeMember(t *testing.T, m *EtcdMember, snap string) {
	t.Helper()
	m.proc.stop(stopGrace)
	tmp := filepath.Join(t.TempDir(), "restored")
	out, err := exec.Command(suite.etcdutl, "snapshot", "restore", snap,
		"--data-dir", tmp,
		"--name", m.Name,
		"--initial-cluster", argValue(m.args, "--initial-cluster"),
		"--initial-cluster-token", argValue(m.args, "--initial-cluster-token"),
		"--initial-advertise-peer-urls", m.PeerURL,
	).CombinedOutput()
	if err != nil {
		t.Fatalf("etcdutl snapshot restore: %v\n%s", err, out)
	}
	db, err := os.ReadFile(filepath.Join(tmp, "member", "snap", "db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(m.DataDir, "member", "snap", "db"), db, 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := startProc("etcd "+m.Name, m.logPath, suite.etcd, m.args...)
	if err != nil {
		t.Fatal(err)
	}
	m.proc = p
	// Caught up: it applied as much of the log as the others.
	eventually(t, m.Name+" applies the log again", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		st, err := c.Etcd.Status(ctx, m.ClientURL)
		if err != nil {
			return err
		}
		ref, err := c.Etcd.Status(ctx, c.Members[0].ClientURL)
		if err != nil {
			return err
		}
		if st.RaftAppliedIndex < ref.RaftAppliedIndex {
			return fmt.Errorf("applied index %d, %s's %d", st.RaftAppliedIndex, c.Members[0].Name, ref.RaftAppliedIndex)
		}
		return nil
	})
}

// TestDivergedMember: a member restored from an old snapshot that rejoins
// with the same ids holds the key at other revisions than the majority. A
// write through it alone, or through all three, is refused before
// anything is written (exit 5), naming it and pointing at diff --members;
// doctor names it as diverged by its hash at a revision all hold.
func TestDivergedMember(t *testing.T) {
	c := startCluster(t, "diverged", ClusterOptions{EtcdMembers: 3, EtcdOnly: true})
	c.put(t, nsKey, corpusValue(t, "namespaces__-__demo.bin"))
	value := corpusValue(t, "configmaps__demo__web-config.bin")
	c.put(t, cmKey, value)
	odd := c.Members[2]
	snap := filepath.Join(t.TempDir(), "old.db")
	if out, err := exec.Command(suite.etcdctl, "--endpoints", odd.ClientURL, "snapshot", "save", snap).CombinedOutput(); err != nil {
		t.Fatalf("etcdctl snapshot save: %v\n%s", err, out)
	}
	for range 3 {
		c.put(t, cmKey, value)
	}
	c.divergeMember(t, odd, snap)
	majority := c.memberGet(t, c.Members[0], cmKey)
	if got := c.memberGet(t, odd, cmKey); got == nil || got.ModRevision == majority.ModRevision {
		t.Fatalf("%s did not diverge: it holds %+v, %s %+v", odd.Name, got, c.Members[0].Name, majority)
	}

	all := c.Members[0].ClientURL + "," + c.others(c.Members[0])
	for _, endpoints := range []string{odd.ClientURL, all} {
		dir := t.TempDir()
		r := runEtcdpvc(t, nil, "--endpoints", endpoints, "--verify=never", "label", "cm", "web-config", "-n", "demo", "diverged=yes", "--yes", "--backup-dir", dir)
		if r.code != 5 || !strings.Contains(r.stderr, "member "+odd.Name) || !strings.Contains(r.stderr, "diff --members") {
			t.Errorf("a write through %s with %s diverged: want exit 5 naming it and diff --members:\n%s", endpoints, odd.Name, r)
		}
		if len(undoLines(r.stdout)) > 0 {
			t.Errorf("a refused write printed an undo line:\n%s", r)
		}
		if files, _ := filepath.Glob(filepath.Join(dir, "*")); len(files) > 0 {
			t.Errorf("a refused write left %v", files)
		}
		for _, m := range c.Members[:2] {
			if got := c.memberGet(t, m, cmKey); got.ModRevision != majority.ModRevision {
				t.Errorf("%s: the key moved from revision %d to %d", m.Name, majority.ModRevision, got.ModRevision)
			}
		}
	}

	// On a terminal, the refusal comes before the question: an operator
	// is not asked to confirm a write that is then refused.
	run := onPTY(t, "--endpoints", all, "--verify=never", "--backup-dir", t.TempDir(), "label", "cm", "web-config", "-n", "demo", "diverged=yes")
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(run.output(), "[y/N]") && !strings.Contains(run.output(), "etcdpvc: error:") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if strings.Contains(run.output(), "[y/N]") {
		t.Errorf("a write through every member with %s diverged asked for confirmation before refusing:\n%s", odd.Name, run.output())
		_, _ = run.master.Write([]byte("n\n"))
	}
	if code := run.exitCode(); code != 5 || !strings.Contains(run.output(), "member "+odd.Name) {
		t.Errorf("a write on a terminal with %s diverged: want exit 5 naming it, got %d:\n%s", odd.Name, code, run.output())
	}

	r := runEtcdpvc(t, nil, "--endpoints", all, "--verify=never", "doctor")
	if r.code == 0 || !strings.Contains(r.stdout+r.stderr, "member "+odd.Name+" diverged") {
		t.Errorf("doctor with %s diverged: want it named, and a failure:\n%s", odd.Name, r)
	}
}
