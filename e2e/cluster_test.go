package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

const (
	// apiserverStartTimeout bounds the wait for /readyz. A cold start of
	// kube-apiserver takes a few seconds on an idle machine and much longer
	// on two shared cores.
	apiserverStartTimeout = 3 * time.Minute
	etcdStartTimeout      = time.Minute
	stopGrace             = 20 * time.Second
)

// ClusterOptions change how a Cluster's kube-apiserver runs.
type ClusterOptions struct {
	// EncryptionConfig is an EncryptionConfiguration file passed as
	// --encryption-provider-config; empty for none.
	EncryptionConfig string
	// APIServerFlags are more kube-apiserver flags (such as
	// --event-ttl=20s), appended after the harness's own.
	APIServerFlags []string
	// EtcdMembers, when more than 1, runs etcd as a cluster of that many
	// members (each its own process, data dir, client and peer port) and
	// the kube-apiserver with every member in --etcd-servers. 0 or 1: the
	// one member "e2e" on etcd-data.
	EtcdMembers int
	// EtcdFlags are more etcd flags for every member (such as
	// --quota-backend-bytes=N), appended after the harness's own.
	EtcdFlags []string
	// EtcdOnly starts etcd alone, without a kube-apiserver (for tests of
	// etcd's faults, run with --verify=never).
	EtcdOnly bool
	// EtcdTLS serves etcd over TLS, clients and peers, with client
	// certificates required, as a kubeadm control plane does: the
	// kube-apiserver, the harness's clients and etcdpvc (--cacert, --cert,
	// --key) present the pki's etcd client certificate.
	EtcdTLS bool
	// Kine runs kine on SQLite instead of etcd, as a single-server k3s
	// does: its database is Dir/db/state.db and it listens on
	// Dir/kine.sock, which EtcdURL names as unix://PATH. With KineTCP it
	// listens on a port of 127.0.0.1 instead.
	Kine, KineTCP bool
	// KineEndpoint, with Kine, is the datastore kine keeps its table in
	// (its --endpoint: a postgres:// or mysql:// URL) instead of SQLite.
	KineEndpoint string
	// KineFlags are more kine flags (such as --compact-interval=1s),
	// appended after the harness's own.
	KineFlags []string
}

// Cluster is an etcd (one member unless ClusterOptions.EtcdMembers says
// more) and one kube-apiserver on 127.0.0.1, each server in its own
// process group, with their data, certificates and logs in Dir.
type Cluster struct {
	Name string
	Dir  string

	EtcdURL string // http(s)://127.0.0.1:PORT, what etcdpvc's --endpoints takes (the first member's)
	Etcd    *clientv3.Client

	// Members are the etcd members of a cluster started with EtcdMembers
	// > 1, in --initial-cluster order; nil for one member.
	Members []*EtcdMember

	APIServerURL string
	Client       kubernetes.Interface
	RESTConfig   *rest.Config

	etcd  *proc // the one member's; nil with Members
	kas   *proc
	pki   *pki
	token string
	opts  ClusterOptions
}

// NewCluster starts etcd and kube-apiserver in a fresh directory under the
// suite's temp dir and waits until the apiserver is ready. Stop undoes it.
func NewCluster(name string, opts ClusterOptions) (c *Cluster, err error) {
	dir, err := os.MkdirTemp(suite.tmp, name+"-")
	if err != nil {
		return nil, err
	}
	c = &Cluster{Name: name, Dir: dir, opts: opts}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	if c.pki, err = newPKI(filepath.Join(dir, "pki")); err != nil {
		return nil, err
	}
	if err := c.startEtcd(); err != nil {
		return nil, err
	}
	if opts.EtcdOnly {
		return c, nil
	}
	c.token = randomHex(16)
	tokens := fmt.Sprintf("%s,e2e-admin,e2e-admin-uid,\"system:masters\"\n", c.token)
	if err := os.WriteFile(filepath.Join(dir, "pki", "tokens.csv"), []byte(tokens), 0o600); err != nil {
		return nil, err
	}
	if err := c.startAPIServer(); err != nil {
		return nil, err
	}
	return c, nil
}

// startCluster starts a cluster of the test's own, stopped when the test
// ends.
func startCluster(t *testing.T, name string, opts ClusterOptions) *Cluster {
	t.Helper()
	c, err := NewCluster(name, opts)
	if err != nil {
		t.Fatalf("start cluster %s: %v", name, err)
	}
	t.Cleanup(c.Stop)
	c.logOnFailure(t)
	return c
}

// Stop kills both servers (SIGTERM, then SIGKILL to the process group) and
// removes the cluster's directory. It is safe to call twice.
func (c *Cluster) Stop() {
	if c.Etcd != nil {
		c.Etcd.Close()
		c.Etcd = nil
	}
	if c.kas != nil {
		c.kas.stop(stopGrace)
	}
	if c.etcd != nil {
		c.etcd.stop(stopGrace)
	}
	c.stopMembers()
	if c.Dir != "" {
		os.RemoveAll(c.Dir)
		c.Dir = ""
	}
}

// logOnFailure logs the end of the servers' logs when t fails.
func (c *Cluster) logOnFailure(t *testing.T) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		procs := []*proc{c.etcd}
		for _, m := range c.Members {
			procs = append(procs, m.proc)
		}
		for _, p := range append(procs, c.kas) {
			if p != nil {
				t.Logf("last lines of %s's log (%s):\n%s", p.name, p.logPath, p.tail(40))
			}
		}
	})
}

func (c *Cluster) startEtcd() error {
	if c.opts.Kine {
		return c.startKine()
	}
	if c.opts.EtcdMembers > 1 {
		return c.startEtcdMembers(c.opts.EtcdMembers)
	}
	return c.startEtcdOn(filepath.Join(c.Dir, "etcd-data"), nil)
}

// EtcdMember is one member of a multi-member etcd.
type EtcdMember struct {
	Name      string // e2e-1, e2e-2, ...
	DataDir   string
	ClientURL string
	PeerURL   string
	proc      *proc
	args      []string // how it was started, for Restart
	logPath   string
}

// startEtcdMembers starts an etcd cluster of n members, each on its own
// data dir under c.Dir and its own ports, bootstrapped together
// (--initial-cluster names all of them), and waits until it serves a
// quorum read and every member answers. c.Etcd is a client of all of them.
func (c *Cluster) startEtcdMembers(n int) error {
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		ports := map[int]bool{}
		port := func() int {
			for {
				if p := freePort(); !ports[p] {
					ports[p] = true
					return p
				}
			}
		}
		c.Members = nil
		var initial []string
		for i := 1; i <= n; i++ {
			m := &EtcdMember{
				Name:      fmt.Sprintf("e2e-%d", i),
				DataDir:   filepath.Join(c.Dir, fmt.Sprintf("etcd-data-%d", i)),
				ClientURL: c.etcdURL(port()),
				PeerURL:   c.etcdURL(port()),
			}
			os.RemoveAll(m.DataDir)
			c.Members = append(c.Members, m)
			initial = append(initial, m.Name+"="+m.PeerURL)
		}
		c.EtcdURL = c.Members[0].ClientURL
		for _, m := range c.Members {
			m.logPath = filepath.Join(c.Dir, fmt.Sprintf("etcd-%s-%d-%d.log", m.Name, time.Now().UnixNano(), attempt))
			m.args = append([]string{"--name", m.Name,
				"--data-dir", m.DataDir,
				"--listen-client-urls", m.ClientURL,
				"--advertise-client-urls", m.ClientURL,
				"--listen-peer-urls", m.PeerURL,
				"--initial-advertise-peer-urls", m.PeerURL,
				"--initial-cluster", strings.Join(initial, ","),
				"--initial-cluster-token", "e2e-" + c.Name,
				"--unsafe-no-fsync",
				"--log-level", "warn",
			}, append(c.etcdTLSFlags(), c.opts.EtcdFlags...)...)
			p, err := startProc("etcd "+m.Name, m.logPath, suite.etcd, m.args...)
			if err != nil {
				c.stopMembers()
				return err
			}
			m.proc = p
		}
		if lastErr = c.waitEtcdMembers(); lastErr == nil {
			return nil
		}
		inUse := false
		for _, m := range c.Members {
			inUse = inUse || strings.Contains(m.proc.tail(20), "address already in use")
		}
		c.stopMembers()
		if !inUse {
			break
		}
	}
	return lastErr
}

// stopMembers stops the members of a multi-member etcd: the followers
// (all at once), then the leader. On SIGTERM a leader first moves its
// leadership to a connected follower, within etcd's request timeout (7s
// here): to one that is stopping too, that takes all of it; with none
// connected, it skips the move.
func (c *Cluster) stopMembers() {
	leader := -1
	for i, m := range c.Members {
		if m.proc == nil || m.proc.exited() {
			continue
		}
		cli, err := clientv3.New(c.etcdClientConfig(time.Second, m.ClientURL))
		if err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		st, err := cli.Status(ctx, m.ClientURL)
		cancel()
		cli.Close()
		if err == nil && st.Header.GetMemberId() == st.Leader {
			leader = i
			break
		}
	}
	done := make(chan struct{})
	n := 0
	for i, m := range c.Members {
		if i == leader {
			continue
		}
		n++
		go func() {
			m.proc.stop(stopGrace)
			done <- struct{}{}
		}()
	}
	for range n {
		<-done
	}
	if leader >= 0 {
		c.Members[leader].proc.stop(stopGrace)
	}
}

// waitEtcdMembers waits until the members serve a quorum read and each
// answers a status request.
func (c *Cluster) waitEtcdMembers() error {
	var urls []string
	for _, m := range c.Members {
		urls = append(urls, m.ClientURL)
	}
	cli, err := clientv3.New(c.etcdClientConfig(2*time.Second, urls...))
	if err != nil {
		return fmt.Errorf("etcd client: %w", err)
	}
	deadline := time.Now().Add(etcdStartTimeout)
	for {
		err = func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			if _, err := cli.Get(ctx, "/e2e-health"); err != nil {
				return err
			}
			for _, m := range c.Members {
				if _, err := cli.Status(ctx, m.ClientURL); err != nil {
					return fmt.Errorf("member %s: %w", m.Name, err)
				}
			}
			return nil
		}()
		if err == nil {
			c.Etcd = cli
			return nil
		}
		for _, m := range c.Members {
			if m.proc.exited() {
				cli.Close()
				return fmt.Errorf("etcd member %s exited before the cluster was ready: %v; log:\n%s", m.Name, err, m.proc.tail(20))
			}
		}
		if time.Now().After(deadline) {
			cli.Close()
			return fmt.Errorf("etcd members at %s not ready: %v", strings.Join(urls, ","), err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// etcdURL is the URL of an etcd member's port on 127.0.0.1: https with
// EtcdTLS.
func (c *Cluster) etcdURL(port int) string {
	if c.opts.EtcdTLS {
		return fmt.Sprintf("https://127.0.0.1:%d", port)
	}
	return fmt.Sprintf("http://127.0.0.1:%d", port)
}

// etcdTLSFlags are the etcd flags that serve clients and peers over TLS
// with client certificates required (none without EtcdTLS).
func (c *Cluster) etcdTLSFlags() []string {
	if !c.opts.EtcdTLS {
		return nil
	}
	return []string{
		"--cert-file", c.pki.etcdCert, "--key-file", c.pki.etcdKey, "--trusted-ca-file", c.pki.caCert, "--client-cert-auth",
		"--peer-cert-file", c.pki.etcdCert, "--peer-key-file", c.pki.etcdKey, "--peer-trusted-ca-file", c.pki.caCert, "--peer-client-cert-auth",
	}
}

// etcdClientConfig is a clientv3 configuration for endpoints, with the
// pki's client certificate under EtcdTLS.
func (c *Cluster) etcdClientConfig(dial time.Duration, endpoints ...string) clientv3.Config {
	cfg := clientv3.Config{Endpoints: endpoints, DialTimeout: dial, Logger: zap.NewNop()}
	if c.opts.EtcdTLS {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(c.pki.caPEM)
		cert, err := tls.LoadX509KeyPair(c.pki.etcdClientCert, c.pki.etcdClientKey)
		if err != nil {
			panic(fmt.Sprintf("the e2e pki's etcd client certificate: %v", err))
		}
		cfg.TLS = &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	return cfg
}

// etcdTLSArgs are etcdpvc's flags for etcd's certificates (none without
// EtcdTLS).
func (c *Cluster) etcdTLSArgs() []string {
	if !c.opts.EtcdTLS {
		return nil
	}
	return []string{"--cacert", c.pki.caCert, "--cert", c.pki.etcdClientCert, "--key", c.pki.etcdClientKey}
}

// etcdServers is the kube-apiserver's --etcd-servers: every member's
// client URL.
func (c *Cluster) etcdServers() string {
	if len(c.Members) == 0 {
		return c.EtcdURL
	}
	var urls []string
	for _, m := range c.Members {
		urls = append(urls, m.ClientURL)
	}
	return strings.Join(urls, ",")
}

// memberClient is a client of one member of a multi-member etcd only,
// closed when the test ends.
func (c *Cluster) memberClient(t *testing.T, m *EtcdMember) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(c.etcdClientConfig(2*time.Second, m.ClientURL))
	if err != nil {
		t.Fatalf("etcd client of %s: %v", m.Name, err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// startEtcdOn starts etcd on dataDir. When prepare is not nil, each attempt
// first removes dataDir and has prepare fill it for the member e2e at
// peerURL (etcdutl snapshot restore needs both).
func (c *Cluster) startEtcdOn(dataDir string, prepare func(dataDir, name, peerURL string) error) error {
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		client, peer := freePort(), freePort()
		c.EtcdURL = c.etcdURL(client)
		peerURL := c.etcdURL(peer)
		if prepare != nil {
			os.RemoveAll(dataDir)
			if err := prepare(dataDir, "e2e", peerURL); err != nil {
				return err
			}
		}
		p, err := startProc("etcd", filepath.Join(c.Dir, fmt.Sprintf("etcd-%d-%d.log", time.Now().UnixNano(), attempt)), suite.etcd, append([]string{
			"--name", "e2e",
			"--data-dir", dataDir,
			"--listen-client-urls", c.EtcdURL,
			"--advertise-client-urls", c.EtcdURL,
			"--listen-peer-urls", peerURL,
			"--initial-advertise-peer-urls", peerURL,
			"--initial-cluster", "e2e=" + peerURL,
			"--unsafe-no-fsync",
			"--log-level", "warn",
		}, append(c.etcdTLSFlags(), c.opts.EtcdFlags...)...)...)
		if err != nil {
			return err
		}
		c.etcd = p
		if lastErr = c.waitEtcd(); lastErr == nil {
			return nil
		}
		p.stop(stopGrace)
		if !strings.Contains(p.tail(20), "address already in use") {
			break
		}
		os.RemoveAll(dataDir)
	}
	return lastErr
}

// RestartOnNewDataDir stops the kube-apiserver and etcd, and starts etcd
// on a new data dir that prepare fills (etcdutl snapshot restore) and then
// the kube-apiserver on it, with the same certificates and token: an
// operator restoring a snapshot. etcd's ports change; the old data dir is
// left as it was.
func (c *Cluster) RestartOnNewDataDir(prepare func(dataDir, name, peerURL string) error) error {
	if len(c.Members) > 0 {
		return fmt.Errorf("RestartOnNewDataDir restores one member, and cluster %s has %d", c.Name, len(c.Members))
	}
	c.kas.stop(stopGrace)
	c.kas = nil
	if c.Etcd != nil {
		c.Etcd.Close()
		c.Etcd = nil
	}
	c.etcd.stop(stopGrace)
	c.etcd = nil
	dataDir, err := os.MkdirTemp(c.Dir, "etcd-restored-")
	if err != nil {
		return err
	}
	if err := c.startEtcdOn(dataDir, prepare); err != nil {
		return err
	}
	return c.startAPIServer()
}

func (c *Cluster) waitEtcd() error {
	cli, err := clientv3.New(c.etcdClientConfig(2*time.Second, c.EtcdURL))
	if err != nil {
		return fmt.Errorf("etcd client: %w", err)
	}
	deadline := time.Now().Add(etcdStartTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err = cli.Get(ctx, "/e2e-health")
		cancel()
		if err == nil {
			c.Etcd = cli
			return nil
		}
		if c.etcd.exited() || time.Now().After(deadline) {
			cli.Close()
			return fmt.Errorf("etcd at %s not ready: %v; log:\n%s", c.EtcdURL, err, c.etcd.tail(20))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (c *Cluster) startAPIServer() error {
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port := freePort()
		c.APIServerURL = fmt.Sprintf("https://127.0.0.1:%d", port)
		args := []string{
			"--etcd-servers", c.etcdServers(),
			"--etcd-compaction-interval", "0", // keep history: recover reads it
			"--bind-address", "127.0.0.1",
			"--advertise-address", "127.0.0.1",
			fmt.Sprintf("--secure-port=%d", port),
			"--tls-cert-file", c.pki.serverCert,
			"--tls-private-key-file", c.pki.serverKey,
			"--cert-dir", filepath.Join(c.Dir, "apiserver-certs"),
			"--token-auth-file", filepath.Join(c.Dir, "pki", "tokens.csv"),
			"--authorization-mode", "RBAC",
			"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
			"--service-account-key-file", c.pki.saPub,
			"--service-account-signing-key-file", c.pki.saKey,
			"--service-cluster-ip-range", "10.96.0.0/16",
			"--endpoint-reconciler-type", "none",
			"--enable-priority-and-fairness=false",
			"--profiling=false",
		}
		if c.opts.EtcdTLS {
			args = append(args, "--etcd-cafile", c.pki.caCert, "--etcd-certfile", c.pki.etcdClientCert, "--etcd-keyfile", c.pki.etcdClientKey)
		}
		if c.opts.EncryptionConfig != "" {
			args = append(args, "--encryption-provider-config", c.opts.EncryptionConfig)
		}
		args = append(args, c.opts.APIServerFlags...)
		p, err := startProc("kube-apiserver", filepath.Join(c.Dir, fmt.Sprintf("kube-apiserver-%d-%d.log", time.Now().UnixNano(), attempt)), suite.kubeAPIServer, args...)
		if err != nil {
			return err
		}
		c.kas = p
		if lastErr = c.waitAPIServer(); lastErr == nil {
			return nil
		}
		p.stop(stopGrace)
		if !strings.Contains(p.tail(40), "address already in use") {
			break
		}
	}
	return lastErr
}

// RestartAPIServer stops the kube-apiserver and starts it again on the same
// etcd with opts, as an operator turning on encryption at rest does.
func (c *Cluster) RestartAPIServer(opts ClusterOptions) error {
	c.kas.stop(stopGrace)
	c.kas = nil
	c.opts = opts
	return c.startAPIServer()
}

func (c *Cluster) waitAPIServer() error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.pki.caPEM)
	hc := &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
	}
	defer hc.CloseIdleConnections()
	deadline := time.Now().Add(apiserverStartTimeout)
	var last string
	for {
		req, _ := http.NewRequest(http.MethodGet, c.APIServerURL+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+c.token)
		resp, err := hc.Do(req)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
			last = fmt.Sprintf("%s: %s", resp.Status, body)
		} else {
			last = err.Error()
		}
		if c.kas.exited() {
			return fmt.Errorf("kube-apiserver exited before it was ready; log:\n%s", c.kas.tail(40))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kube-apiserver at %s not ready after %s: %s; log:\n%s", c.APIServerURL, apiserverStartTimeout, last, c.kas.tail(40))
		}
		time.Sleep(500 * time.Millisecond)
	}
	c.RESTConfig = &rest.Config{
		Host:            c.APIServerURL,
		BearerToken:     c.token,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.pki.caPEM},
		QPS:             1000,
		Burst:           1000,
		Timeout:         30 * time.Second,
	}
	cs, err := kubernetes.NewForConfig(c.RESTConfig)
	if err != nil {
		return err
	}
	c.Client = cs
	return nil
}

// EnsureNamespace creates namespace ns unless it exists.
func (c *Cluster) EnsureNamespace(t *testing.T, ns string) {
	t.Helper()
	_, err := c.Client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace %s: %v", ns, err)
	}
}

// proc is one server process, the leader of its own process group.
type proc struct {
	name    string
	logPath string
	cmd     *exec.Cmd
	done    chan struct{}
	err     error
}

func startProc(name, logPath, bin string, args ...string) (*proc, error) {
	return startProcAs(nil, name, logPath, bin, args...)
}

// startProcAs is startProc run as the user cred names (nil: this one).
func startProcAs(cred *syscall.Credential, name, logPath, bin string, args ...string) (*proc, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout = logf
	cmd.Stderr = logf
	// Setpgid lets stop kill the whole group; Pdeathsig kills the server
	// if this test binary dies (a panic or a timeout skips every cleanup).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: cred}
	if err := spawn(cmd); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, logPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to p's process group, and SIGKILL after grace.
func (p *proc) stop(grace time.Duration) {
	if p == nil || p.exited() {
		return
	}
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
	}
	// Children the server left behind in its group.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// tail returns the last n lines of p's log.
func (p *proc) tail(n int) string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// spawnReqs carries processes to start to one goroutine locked to its OS
// thread for the life of the test binary: Pdeathsig fires when the thread
// that started the child exits, not only when the process does.
var spawnReqs = make(chan spawnReq)

type spawnReq struct {
	cmd  *exec.Cmd
	errc chan error
}

func init() {
	go func() {
		runtime.LockOSThread()
		for r := range spawnReqs {
			r.errc <- r.cmd.Start()
		}
	}()
}

func spawn(cmd *exec.Cmd) error {
	errc := make(chan error, 1)
	spawnReqs <- spawnReq{cmd, errc}
	return <-errc
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(fmt.Sprintf("find a free port: %v", err))
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// etcdGet reads key's current value straight from etcd.
func (c *Cluster) etcdGet(t *testing.T, key string) *mvccKV {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.Etcd.Get(ctx, key)
	if err != nil {
		t.Fatalf("etcd get %s: %v", key, err)
	}
	if len(resp.Kvs) != 1 {
		t.Fatalf("etcd get %s: %d values, want 1", key, len(resp.Kvs))
	}
	kv := resp.Kvs[0]
	return &mvccKV{Key: string(kv.Key), Value: kv.Value, ModRevision: kv.ModRevision, CreateRevision: kv.CreateRevision, Version: kv.Version, Lease: kv.Lease}
}

// mvccKV is one etcd key-value pair as read.
type mvccKV struct {
	Key            string
	Value          []byte
	ModRevision    int64
	CreateRevision int64
	Version        int64
	Lease          int64
}

// storedPrefix names the format a stored value starts with: an encryption
// provider's k8s:enc:NAME:v1:KEY: prefix, protobuf or JSON.
func storedPrefix(v []byte) string {
	switch {
	case bytes.HasPrefix(v, []byte("k8s:enc:")):
		parts := bytes.SplitN(v, []byte(":"), 6)
		if len(parts) == 6 {
			return string(bytes.Join(parts[:5], []byte(":"))) + ":"
		}
		return "k8s:enc:?"
	case bytes.HasPrefix(v, []byte("k8s\x00")):
		return "k8s\\x00 (protobuf)"
	case bytes.HasPrefix(v, []byte("{")):
		return "{ (JSON)"
	}
	n := min(len(v), 16)
	return fmt.Sprintf("%q", v[:n])
}
