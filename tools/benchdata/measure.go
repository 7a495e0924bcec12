package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
)

// result is one measured run.
type result struct {
	name        string
	seconds     float64
	cpu         float64 // user+sys seconds, from wait4
	maxRSS      int64   // bytes, from wait4
	peakRssAnon int64   // bytes, sampled
	outBytes    int64
	err         error
	note        string // said of a run that exited 10
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func measureMain(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("measure", flag.ContinueOnError)
	revisions := fs.Int("revisions", 1_000_000, "which data set (see generate)")
	dir := fs.String("dir", defaultDir(), "where the data set is kept")
	bin := fs.String("bin", "bin/etcdpvc", "the etcdpvc binary")
	cold := fs.Bool("cold", true, "also measure with a cold page cache (needs root; skipped if not allowed)")
	runs := fs.Int("runs", 3, "warm runs of each command, interleaved; the table shows their medians")
	if err := fs.Parse(args); err != nil {
		return err
	}
	dbPath, manPath := dataset(*dir, *revisions)
	b, err := os.ReadFile(manPath)
	if err != nil {
		return fmt.Errorf("%w: run `make bench-data BENCH_REVISIONS=%d` first", err, *revisions)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	fi, err := os.Stat(dbPath)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cases := []struct {
		name string
		argv []string
		// out: the command writes a file, named by --out: a new one in a
		// temporary directory, removed after the run.
		out bool
	}{
		{"bbolt scan, default mmap", []string{self, "scan", dbPath}, false},
		{"bbolt scan, populate (limit)", []string{self, "scan", "-populate", dbPath}, false},
		{"ls -A", []string{*bin, "--db", dbPath, "ls", "-A"}, false},
		{"ls -A --terminating", []string{*bin, "--db", dbPath, "ls", "-A", "--terminating"}, false},
		{"wal ls -A --deleted", []string{*bin, "--wal", walDir(dbPath), "--db", dbPath, "ls", "-A", "--deleted"}, false},
		{"history (1 key)", []string{*bin, "--db", dbPath, "history", "--etcd-key", m.HistoryKey}, false},
		{"dump", []string{*bin, "--db", dbPath, "dump"}, false},
		{"salvage --out TMP", []string{*bin, "--db", dbPath, "salvage"}, true},
		{"stats", []string{*bin, "--db", dbPath, "stats"}, false},
		{"report", []string{*bin, "--db", dbPath, "report", "-o", "-"}, false},
	}
	// Two members' db files: the data set and a copy of it (in a temporary
	// directory beside it, removed after the runs), compared object by
	// object with the hashes as diff --members compares members.
	member, err := copyMember(dbPath)
	if err != nil {
		return err
	}
	defer os.RemoveAll(filepath.Dir(member))
	cases = append(cases, struct {
		name string
		argv []string
		out  bool
	}{"diff --members (2 files)", []string{*bin, "diff", "--members", dbPath, member}, false})
	if ci, err := consistentIndexOf(dbPath); err == nil && exists(olderSnapshot(dbPath)) && exists(walDir(dbPath)) {
		// The point in time at the final snapshot's index, from the older
		// snapshot and the log, checked against the final snapshot: the
		// final snapshot again.
		cases = append(cases, struct {
			name string
			argv []string
			out  bool
		}{"wal snapshot --index (PIT)", []string{*bin, "--wal-base", olderSnapshot(dbPath), "--db", dbPath, "--wal", walDir(dbPath), "snapshot", "--index", fmt.Sprint(ci)}, true})
	} else {
		fmt.Printf("%s is missing: the point-in-time case is skipped (remove %s and generate again)\n", olderSnapshot(dbPath), dbPath)
	}
	if !exists(walDir(dbPath)) {
		// A data set generated before its wal was kept.
		fmt.Printf("%s is missing: the --wal case is skipped (remove %s and generate again)\n", walDir(dbPath), dbPath)
		kept := cases[:0]
		for _, c := range cases {
			if !strings.HasPrefix(c.name, "wal ") {
				kept = append(kept, c)
			}
		}
		cases = kept
	}
	fmt.Printf("data set: %s, %.2f GB, %d revisions, %d live objects, %d Terminating PVCs, history key %s (%d revisions)\n",
		dbPath, float64(fi.Size())/1e9, m.Revisions, m.Live, m.Terminating, m.HistoryKey, m.HistoryRevisions)
	fmt.Printf("machine: %d CPUs; revisions/s and MB/s are over the whole file (%d revisions, %.0f MB)\n\n", numCPU(), m.Revisions, float64(fi.Size())/1e6)
	// Warm the cache once.
	if _, err := runOne(ctx, "warm-up", cases[1].argv); err != nil {
		return err
	}
	modes := []string{"warm"}
	if *cold {
		if err := dropCaches(); err != nil {
			fmt.Printf("cold runs skipped: %v\n\n", err)
		} else {
			modes = append(modes, "cold")
		}
	}
	fmt.Printf("%-5s %-30s %9s %7s %9s %7s %12s %9s %12s %14s %12s\n", "CACHE", "COMMAND", "SECONDS", "×SCAN", "CPU S", "×SCAN", "REVISIONS/S", "MB/S", "PEAK RSS MB", "PEAK ANON MB", "OUTPUT MB")
	for _, mode := range modes {
		n := *runs
		if mode == "cold" {
			n = 1
		}
		// Each command's runs, interleaved with the others' so that a
		// load that comes and goes weighs on all alike.
		all := make([][]*result, len(cases))
		for range n {
			for i, c := range cases {
				if mode == "cold" {
					if err := dropCaches(); err != nil {
						return err
					}
				}
				r, err := runOut(ctx, c.name, c.argv, c.out)
				if err != nil {
					fmt.Printf("%-5s %-30s failed: %v\n", mode, c.name, err)
					continue
				}
				all[i] = append(all[i], r)
			}
		}
		// The raw scan the ratios are to: bbolt's cursor over the file
		// mapped as etcdpvc maps it.
		scan := median(all[1])
		for i := range cases {
			r := median(all[i])
			if r == nil {
				continue
			}
			fmt.Printf("%-5s %-30s %9.2f %7.2f %9.2f %7.2f %12.0f %9.0f %12.0f %14.0f %12.1f\n", mode, r.name, r.seconds, ratio(r.seconds, scan, false),
				r.cpu, ratio(r.cpu, scan, true),
				float64(m.Revisions)/r.seconds, float64(fi.Size())/1e6/r.seconds, float64(r.maxRSS)/1e6, float64(r.peakRssAnon)/1e6, float64(r.outBytes)/1e6)
			if r.note != "" {
				fmt.Printf("      %s\n", r.note)
			}
		}
	}
	fmt.Printf("\n×SCAN: to the populated bbolt scan; medians of %d warm runs (wall and CPU apart); CPU is user+sys, the figure to compare on a loaded machine\n", *runs)
	if m.SnapshotSaveSeconds > 0 {
		fmt.Printf("%-5s %-30s %9.2f   (etcd's own snapshot save of the final data set, timed when it was generated)\n", "-", "etcdctl snapshot save", m.SnapshotSaveSeconds)
	}
	return nil
}

// median is the run of median wall time and, in its cpu, the median CPU
// time of rs; nil for none.
func median(rs []*result) *result {
	if len(rs) == 0 {
		return nil
	}
	byWall := slices.Clone(rs)
	slices.SortFunc(byWall, func(a, b *result) int { return cmp.Compare(a.seconds, b.seconds) })
	cpus := make([]float64, len(rs))
	for i, r := range rs {
		cpus[i] = r.cpu
	}
	slices.Sort(cpus)
	r := *byWall[len(byWall)/2]
	r.cpu = cpus[len(cpus)/2]
	return &r
}

// ratio is v over the scan's wall time, or its CPU time when cpu; 0 when
// there is no scan to compare with.
func ratio(v float64, scan *result, cpu bool) float64 {
	base := 0.0
	if scan != nil {
		base = scan.seconds
		if cpu {
			base = scan.cpu
		}
	}
	if base == 0 {
		return 0
	}
	return v / base
}

// copyMember copies the db file at path into a new temporary directory
// beside it, as a second member's file, and returns the copy's path.
func copyMember(path string) (string, error) {
	dir, err := os.MkdirTemp(filepath.Dir(path), "member-copy-")
	if err != nil {
		return "", err
	}
	dst := filepath.Join(dir, "member.db")
	if err := copyFile(path, dst); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("copy %s as a second member: %w", path, err)
	}
	// The copy's pages written back now, not during the runs it would slow.
	syscall.Sync()
	return dst, nil
}

// consistentIndexOf reads a db file's consistent index.
func consistentIndexOf(path string) (uint64, error) {
	db, err := bolt.Open(path, 0o400, &bolt.Options{ReadOnly: true, Timeout: 2 * time.Second})
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var ci uint64
	err = db.View(func(tx *bolt.Tx) error {
		mb := tx.Bucket([]byte("meta"))
		if mb == nil {
			return errors.New("no meta bucket")
		}
		v := mb.Get([]byte("consistent_index"))
		if len(v) != 8 {
			return errors.New("no consistent index")
		}
		ci = binary.BigEndian.Uint64(v)
		return nil
	})
	return ci, err
}

// runOut is runOne, with, when out is set, "--out FILE" added to argv:
// a new file in a temporary directory, removed after the run (its size
// is said in the result's note).
func runOut(ctx context.Context, name string, argv []string, out bool) (*result, error) {
	if !out {
		return runOne(ctx, name, argv)
	}
	dir, err := os.MkdirTemp("", "etcdpvc-measure-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "out.db")
	r, err := runOne(ctx, name, append(slices.Clip(argv), "--out", path))
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(path); err == nil {
		r.note = strings.TrimPrefix(r.note+"; ", "; ") + fmt.Sprintf("wrote %.1f MB (removed)", float64(fi.Size())/1e6)
	}
	return r, nil
}

// runOne runs argv with stdout counted and discarded, and measures it.
func runOne(ctx context.Context, name string, argv []string) (*result, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cw := &countWriter{}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = cw, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan struct{})
	var peakAnon int64
	go func() {
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			if v := rssAnon(cmd.Process.Pid); v > peakAnon {
				peakAnon = v
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	err := cmd.Wait()
	elapsed := time.Since(start)
	close(done)
	r := &result{name: name, seconds: elapsed.Seconds(), outBytes: cw.n, peakRssAnon: peakAnon}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && ee.ExitCode() == 10:
		// Incomplete: it read everything it could and said what it could
		// not establish; the run is measured, and its last words shown.
		r.note = "exit 10: " + lastLine(stderr.String())
	case err != nil:
		return nil, fmt.Errorf("%s: %w: %s", name, err, strings.TrimSpace(stderr.String()))
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.maxRSS = ru.Maxrss * 1024
		r.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	}
	return r, nil
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// rssAnon reads RssAnon (bytes) from /proc/PID/status; 0 if unknown.
func rssAnon(pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "RssAnon:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// dropCaches empties the page cache (root, and a writable /proc/sys).
func dropCaches() error {
	syscall.Sync()
	f, err := os.OpenFile("/proc/sys/vm/drop_caches", os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("drop caches: %w", err)
	}
	defer f.Close()
	if _, err := io.WriteString(f, "3\n"); err != nil {
		return fmt.Errorf("drop caches: %w", err)
	}
	return nil
}

// scanMain is the physical limit: open the file read-only with bbolt and
// walk the "key" bucket with one cursor, touching every value. With
// -populate the file is mapped with MAP_POPULATE, as etcdpvc maps it: by
// default bbolt advises the kernel MADV_RANDOM, and each page is then a
// page fault of its own, which on a virtual machine costs far more than
// reading the file.
func scanMain(args []string) error {
	fs := flag.NewFlagSet("scan", flag.ContinueOnError)
	populate := fs.Bool("populate", false, "map the file with MAP_POPULATE")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("usage: benchdata scan [-populate] FILE")
	}
	opts := &bolt.Options{ReadOnly: true, Timeout: 2 * time.Second}
	if *populate {
		opts.MmapFlags = populateFlag
	}
	db, err := bolt.Open(fs.Arg(0), 0o400, opts)
	if err != nil {
		return err
	}
	defer db.Close()
	var n, size int64
	var sum byte
	err = db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("key"))
		if b == nil {
			return errors.New("no key bucket")
		}
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			n++
			size += int64(len(v))
			if len(v) > 0 {
				sum ^= v[len(v)-1]
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Printf("entries=%d valueBytes=%d x=%d\n", n, size, sum)
	return nil
}

func numCPU() int {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return 0
	}
	return bytes.Count(b, []byte("\nprocessor")) + 1
}
