package e2e

import (
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// sqlPassword is the password of the database user kine and etcdpvc
// connect as; a test fails if etcdpvc prints it.
const sqlPassword = "kine-Secret-7c1f"

// sqlUser is the user a database server runs as: this one, or nobody
// when this is root (PostgreSQL refuses to run as root). dir is given to
// that user.
func sqlUser(t *testing.T, dir string) *syscall.Credential {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Fatalf("a user to run the database server as: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	}); err != nil {
		t.Fatal(err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}

// sqlDir is a new directory for a database server, which its user can
// reach (t.TempDir's parents are this user's alone); removed at cleanup.
func sqlDir(t *testing.T, name string) string {
	t.Helper()
	base := ""
	if os.Geteuid() == 0 {
		// root's TMPDIR may be below a directory nobody cannot enter.
		base = "/tmp"
	}
	dir, err := os.MkdirTemp(base, "etcdpvc-"+name+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// runAs runs bin with args as cred, failing t with its output.
func runAs(t *testing.T, cred *syscall.Credential, bin string, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, out)
	}
}

// waitLog waits until the log of p holds ready.
func waitLog(t *testing.T, p *proc, ready string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		if b, _ := os.ReadFile(p.logPath); strings.Contains(string(b), ready) {
			return
		}
		if p.exited() {
			t.Fatalf("%s exited before it was ready:\n%s", p.name, p.tail(40))
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s not ready after 3 minutes:\n%s", p.name, p.tail(40))
}

// postgresBin is the directory of PostgreSQL's server binaries, from the
// distribution's packages (the newest under /usr/lib/postgresql), or of
// initdb on PATH; "" when there are none.
func postgresBin() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi > vj
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			return d
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p)
	}
	return ""
}

// startPostgres starts a PostgreSQL server of its own on a port of
// 127.0.0.1, its user kine with sqlPassword, and returns the URL kine and
// etcdpvc connect with. It skips t when PostgreSQL is not installed.
func startPostgres(t *testing.T) string {
	t.Helper()
	bin := postgresBin()
	if bin == "" {
		t.Skip("PostgreSQL's server is not installed (no /usr/lib/postgresql/*/bin/postgres, no initdb on PATH): run e2e/install-sql-servers.sh as root (Debian's postgresql package)")
	}
	dir := sqlDir(t, "postgres")
	pw := filepath.Join(dir, "pwfile")
	if err := os.WriteFile(pw, []byte(sqlPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cred := sqlUser(t, dir)
	data := filepath.Join(dir, "data")
	runAs(t, cred, filepath.Join(bin, "initdb"), "-D", data, "-U", "kine", "--pwfile", pw, "--auth", "scram-sha-256", "-E", "UTF8", "--no-sync")
	port := freePort()
	p, err := startProcAs(cred, "postgres", filepath.Join(dir, "postgres.log"), filepath.Join(bin, "postgres"),
		"-D", data, "-k", dir, "-h", "127.0.0.1", "-p", strconv.Itoa(port), "-c", "fsync=off")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.stop(stopGrace) })
	waitLog(t, p, "database system is ready to accept connections")
	return fmt.Sprintf("postgres://kine:%s@127.0.0.1:%d/kine?sslmode=disable", url.QueryEscape(sqlPassword), port)
}

// sbinPath is the path of the program name on PATH, else in /usr/sbin
// (where Debian puts mariadbd, off a user's PATH); "" if neither.
func sbinPath(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if p := filepath.Join("/usr/sbin", name); isExecutable(p) {
		return p
	}
	return ""
}

// isExecutable reports whether path is a file someone may execute.
func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// startMariaDB starts a MariaDB (or MySQL) server of its own on a port of
// 127.0.0.1, its user kine with sqlPassword, and returns the URL kine and
// etcdpvc connect with. It skips t when MariaDB is not installed.
func startMariaDB(t *testing.T) string {
	t.Helper()
	server, install := sbinPath("mariadbd"), sbinPath("mariadb-install-db")
	if server == "" || install == "" {
		t.Skip("MariaDB's server is not installed (no mariadbd and mariadb-install-db on PATH or in /usr/sbin): run e2e/install-sql-servers.sh as root (Debian's mariadb-server package)")
	}
	dir := sqlDir(t, "mariadb")
	data := filepath.Join(dir, "data")
	init := filepath.Join(dir, "init.sql")
	if err := os.WriteFile(init, []byte(fmt.Sprintf("CREATE USER IF NOT EXISTS 'kine'@'%%' IDENTIFIED BY '%s';\nGRANT ALL ON *.* TO 'kine'@'%%';\n", sqlPassword)), 0o600); err != nil {
		t.Fatal(err)
	}
	cred := sqlUser(t, dir)
	runAs(t, cred, install, "--no-defaults", "--datadir="+data, "--auth-root-authentication-method=normal", "--skip-test-db")
	port := freePort()
	p, err := startProcAs(cred, "mariadb", filepath.Join(dir, "mariadb.log"), server, "--no-defaults",
		"--datadir="+data, "--socket="+filepath.Join(dir, "mysql.sock"), "--pid-file="+filepath.Join(dir, "mariadb.pid"),
		"--bind-address=127.0.0.1", "--port="+strconv.Itoa(port), "--skip-name-resolve", "--init-file="+init,
		"--innodb-flush-log-at-trx-commit=0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.stop(stopGrace) })
	waitLog(t, p, "ready for connections")
	return fmt.Sprintf("mysql://kine:%s@tcp(127.0.0.1:%d)/kine", sqlPassword, port)
}

// TestKinePostgres runs TestKine's seed scenarios on kine over a
// PostgreSQL server, under the real kube-apiserver with encryption at
// rest, then reads the table with --db postgres://… and checks it agrees
// with the apiserver's view, the password never printed.
func TestKinePostgres(t *testing.T) {
	testKineSQLServer(t, "kine-postgres", startPostgres(t))
}

// TestKineMySQL is TestKinePostgres over a MariaDB server, with
// --db mysql://….
func TestKineMySQL(t *testing.T) {
	testKineSQLServer(t, "kine-mysql", startMariaDB(t))
}

// testKineSQLServer runs kine on the datastore endpoint under a
// kube-apiserver: the seed scenarios over its etcd API, then the reads
// of --db endpoint.
func testKineSQLServer(t *testing.T, name, endpoint string) {
	cfg := filepath.Join(t.TempDir(), "encryption-config.yaml")
	if err := os.WriteFile(cfg, []byte(encryptionConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	c := startCluster(t, name, ClusterOptions{Kine: true, KineEndpoint: endpoint, EncryptionConfig: cfg})
	kineScenarios(t, c, cfg)
	t.Run("--node finds k3s on kine", func(t *testing.T) {
		// A k3s server whose datastore-endpoint is the server's URL: kine
		// listens on its socket all the same.
		root := t.TempDir()
		layNode(t, root, nodeLayout{files: map[string]string{
			"etc/rancher/k3s/config.yaml": "datastore-endpoint: \"" + endpoint + "\"\n",
		}}, 0o600)
		if err := os.MkdirAll(filepath.Join(root, "var/lib/rancher/k3s/server"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(strings.TrimPrefix(c.EtcdURL, "unix://"), filepath.Join(root, "var/lib/rancher/k3s/server/kine.sock")); err != nil {
			t.Fatal(err)
		}
		r := runEtcdpvc(t, nil, "--node", root, "get", "ns", "kube-system", "-o", "yaml")
		if r.code != 0 || !strings.Contains(r.stdout, "name: kube-system") || strings.Contains(r.stdout+r.stderr, sqlPassword) {
			t.Errorf("--node on k3s with kine on %s: want kube-system read through the socket, no password:\n%s", name, r)
		}
	})
	t.Run("offline", func(t *testing.T) {
		const ns = "offline"
		want, gone := kineOfflineObjects(t, c, ns)
		checkKineOffline(t, endpoint, sqlPassword, cfg, ns, want, gone)
	})
	t.Run("names differing in case", func(t *testing.T) {
		// kine's MySQL table compares names case-insensitively: the
		// reader must not take one for the other.
		for _, name := range []string{"Web", "web"} {
			c.put(t, "/registry/services/specs/case/"+name, []byte(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"`+name+`","namespace":"case","uid":"u-`+name+`"}}`))
		}
		r := runEtcdpvc(t, nil, "--db", endpoint, "ls", "svc", "-n", "case", "-o", "json")
		if r.code != 0 || !strings.Contains(r.stdout, "u-Web") || !strings.Contains(r.stdout, "u-web") {
			t.Errorf("ls: want both services, Web and web:\n%s", r)
		}
		r = runEtcdpvc(t, nil, "--db", endpoint, "get", "svc", "Web", "-n", "case", "-o", "json")
		if r.code != 0 || !strings.Contains(r.stdout, "u-Web") {
			t.Errorf("get Web: want its uid u-Web:\n%s", r)
		}
	})
}
