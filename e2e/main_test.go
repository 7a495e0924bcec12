package e2e

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

var captureFixtures = flag.Bool("capture", false, "write the stored bytes and the apiserver's JSON of the objects the scenarios create to testdata/fixtures")

// suite holds what TestMain prepares for every test.
var suite struct {
	etcd, etcdctl, etcdutl string // binaries built by build-servers.sh
	kubeAPIServer          string
	kine                   string
	etcdpvc                string // built from this checkout
	tmp                    string // removed when the suite ends

	sharedOnce sync.Once
	shared     *Cluster
	sharedErr  error
}

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	if err := locateServers(); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: e2e: %v\n\nThe e2e suite needs etcd and kube-apiserver built from source: run `make e2e` (or e2e/build-servers.sh) first.\n", err)
		return 1
	}
	removeStaleTempDirs()
	tmp, err := os.MkdirTemp("", "etcdpvc-e2e-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: e2e: %v\n", err)
		return 1
	}
	suite.tmp = tmp
	defer os.RemoveAll(tmp)
	if err := os.WriteFile(filepath.Join(tmp, "pid"), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: e2e: %v\n", err)
		return 1
	}
	if suite.etcdpvc, err = buildEtcdpvc(tmp); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: e2e: %v\n", err)
		return 1
	}
	if *captureFixtures {
		// Start afresh, so that no fixture of an older run is left over.
		for _, set := range []string{"plain", "encrypted"} {
			if err := os.RemoveAll(filepath.Join(fixturesDir, set)); err != nil {
				fmt.Fprintf(os.Stderr, "FAIL: e2e: %v\n", err)
				return 1
			}
		}
	}
	code := m.Run()
	if suite.shared != nil {
		suite.shared.Stop()
	}
	return code
}

// removeStaleTempDirs removes the temp dirs of earlier runs that died
// without cleaning up (a panic or a timeout skips TestMain's cleanup; their
// servers died with them, by Pdeathsig).
func removeStaleTempDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "etcdpvc-e2e-*"))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, "pid"))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			os.RemoveAll(dir)
		}
	}
}

// sharedCluster returns the etcd and kube-apiserver most tests share,
// starting them on first use. TestMain stops them.
func sharedCluster(t *testing.T) *Cluster {
	t.Helper()
	suite.sharedOnce.Do(func() {
		suite.shared, suite.sharedErr = NewCluster("shared", ClusterOptions{})
	})
	if suite.sharedErr != nil {
		t.Fatalf("start the shared cluster: %v", suite.sharedErr)
	}
	suite.shared.logOnFailure(t)
	return suite.shared
}

// repoRoot is the etcdpvc checkout this suite lives in.
func repoRoot() (string, error) {
	root, err := filepath.Abs("..")
	if err != nil {
		return "", err
	}
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return "", fmt.Errorf("find the etcdpvc checkout: %w", err)
	}
	if !bytes.HasPrefix(mod, []byte("module github.com/etcdpvc/etcdpvc\n")) && !bytes.Contains(mod, []byte("\nmodule github.com/etcdpvc/etcdpvc\n")) {
		return "", fmt.Errorf("%s is not the etcdpvc module", filepath.Join(root, "go.mod"))
	}
	return root, nil
}

// buildEtcdpvc builds the CLI from this checkout into dir.
func buildEtcdpvc(dir string) (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "etcdpvc")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/etcdpvc")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build etcdpvc in %s: %v\n%s", root, err, out)
	}
	return bin, nil
}

// cacheRoot is where build-servers.sh puts the servers.
func cacheRoot() (string, error) {
	if d := os.Getenv("E2E_CACHE_DIR"); d != "" {
		return d, nil
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "etcdpvc-e2e"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find the build cache: %w", err)
	}
	return filepath.Join(home, ".cache", "etcdpvc-e2e"), nil
}

// locateServers finds the binaries build-servers.sh built for the pins in
// tools/*/go.mod and checks that they were built from those pins.
func locateServers() error {
	root, err := cacheRoot()
	if err != nil {
		return err
	}
	etcdDir, err := toolDir(root, "etcd", "tools/etcd", "go.etcd.io/etcd/server/v3")
	if err != nil {
		return err
	}
	kasDir, err := toolDir(root, "kube-apiserver", "tools/kube-apiserver", "k8s.io/kubernetes")
	if err != nil {
		return err
	}
	kineDir, err := toolDir(root, "kine", "tools/kine", "github.com/k3s-io/kine")
	if err != nil {
		return err
	}
	for _, b := range []struct {
		dst *string
		dir string
		bin string
	}{
		{&suite.etcd, etcdDir, "etcd"},
		{&suite.etcdctl, etcdDir, "etcdctl"},
		{&suite.etcdutl, etcdDir, "etcdutl"},
		{&suite.kubeAPIServer, kasDir, "kube-apiserver"},
		{&suite.kine, kineDir, "kine"},
	} {
		p := filepath.Join(b.dir, b.bin)
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("%s is missing: %w", b.bin, err)
		}
		if fi.Mode()&0o111 == 0 {
			return fmt.Errorf("%s is not executable", p)
		}
		*b.dst = p
	}
	return nil
}

// toolDir returns $cache/NAME-VERSION for the wrapper module in moddir,
// after checking that its stamp is the sha256 of moddir's go.mod and
// go.sum, as build-servers.sh writes it.
func toolDir(cache, name, moddir, module string) (string, error) {
	gomod, err := os.ReadFile(filepath.Join(moddir, "go.mod"))
	if err != nil {
		return "", err
	}
	gosum, err := os.ReadFile(filepath.Join(moddir, "go.sum"))
	if err != nil {
		return "", err
	}
	version, err := requiredVersion(gomod, module)
	if err != nil {
		return "", fmt.Errorf("%s/go.mod: %w", moddir, err)
	}
	sum := sha256.Sum256(append(append([]byte{}, gomod...), gosum...))
	want := hex.EncodeToString(sum[:])
	dir := filepath.Join(cache, name+"-"+version)
	got, err := os.ReadFile(filepath.Join(dir, "stamp"))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("%s %s is not built (no %s)", name, version, filepath.Join(dir, "stamp"))
	case err != nil:
		return "", err
	case strings.TrimSpace(string(got)) != want:
		return "", fmt.Errorf("%s in %s was built from other pins than %s/go.mod and go.sum", name, dir, moddir)
	}
	return dir, nil
}

// requiredVersion returns the version gomod requires of module.
func requiredVersion(gomod []byte, module string) (string, error) {
	sc := bufio.NewScanner(bytes.NewReader(gomod))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) >= 2 && f[0] == module && strings.HasPrefix(f[1], "v"):
			return f[1], nil
		case len(f) >= 3 && f[0] == "require" && f[1] == module:
			return f[2], nil
		}
	}
	return "", fmt.Errorf("no requirement on %s", module)
}
