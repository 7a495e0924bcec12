package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/etcdpvc/etcdpvc/flows"
	"github.com/etcdpvc/etcdpvc/internal/cliargs"
	"github.com/etcdpvc/etcdpvc/internal/newfile"
)

func reportCommand() command {
	return command{
		name:  "report",
		usage: "write one self-contained HTML page of what fills the store: treemap, hottest keys, stuck, unreadable, deleted",
		desc: "report reads the store once, as stats does, and writes one HTML file that needs nothing else to be\n" +
			"read offline (inline CSS and SVG, no script, no request leaves the page): the source (file, its\n" +
			"sha256 and snapshot trailer, revision range, compaction, the span of the objects' creation times);\n" +
			"a treemap of the current bytes by resource, then namespace; the bytes, revisions and history bytes\n" +
			"per resource; the hottest keys (as stats counts them: --db every revision held, live with --since\n" +
			"REV) and the largest objects; the leases with most keys; the objects stuck Terminating with their\n" +
			"finalizers; the values that cannot be read and why; the objects not under their resource's write\n" +
			"provider (with --encryption-config); and, with --db, the keys whose newest revision is a deletion,\n" +
			"each with the etcdpvc recover command that recreates it (a dry run). Lists are bounded (--top,\n" +
			"--details) and say their totals. Secrets: names only, never a value. As stats, a report with\n" +
			"values not read, or of part of the store, is written and exits with status 10.",
		examples: `etcdpvc --db snapshot.db report -o report.html
etcdpvc --kubeadm --encryption-config /etc/kubernetes/enc.yaml report --since 1200000 -o report.html`,
		flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "report.html", Usage: "the new HTML file to write (it must not exist; - for stdout)"},
			&cli.IntFlag{Name: "top", Value: 20, Usage: "how many of the largest objects, hottest keys and leases to list"},
			&cli.IntFlag{Name: "details", Value: 200, Usage: "how many objects to list Terminating, unreadable and deleted"},
			&cli.Int64Flag{Name: "since", Usage: "count the hottest keys' revisions from revision `REV` to now (live: etcd's watch replays them)"},
			&cli.Int64Flag{Name: "page-size", Value: 500, Usage: "keys per range request (live etcd)"},
		},
		args: cliargs.None,
		action: func(c *cli.Context, e *env, in *input) error {
			r := flows.ReportRequest{Top: c.Int("top"), Details: c.Int("details"), PageSize: c.Int64("page-size"), Since: c.Int64("since"), Now: e.now()}
			if r.Top < 0 || r.Details < 0 || r.Since < 0 || r.PageSize <= 0 {
				return usagef("--top, --details and --since must not be negative and --page-size must be positive")
			}
			return runReport(e, in.g, c.String("output"), r)
		},
	}
}

func runReport(e *env, g *globalOptions, out string, r flows.ReportRequest) error {
	if out != "-" {
		if newfile.IsInput(out, g.DB) {
			return usagef("-o %s is the input: report never writes its input", out)
		}
		if err := newfile.Check(out); err != nil {
			return fmt.Errorf("write the report: %w (-o - writes it to stdout)", err)
		}
	}
	s, p, err := openCounting(e, g, "report")
	if err != nil {
		return err
	}
	defer s.Close()
	if out == "-" {
		return s.Report(e.ctx, e.stdout, r, p, e.Warn)
	}
	err = writeReportFile(out, func(w io.Writer) error { return s.Report(e.ctx, w, r, p, e.Warn) })
	if err == nil || errors.Is(err, flows.ErrIncomplete) {
		fmt.Fprintf(e.stderr, "etcdpvc: report written to %s\n", out)
	}
	return err
}

// writeReportFile writes the report to path, a new file (newfile.Write):
// a page cut short never gets the name. A report whose outcome is
// incomplete (written whole) is kept. The file is the owner's only
// (0600): it names keys, Secrets' among them.
func writeReportFile(path string, write func(w io.Writer) error) error {
	var werr error
	err := newfile.Write(path, func(tmp string) error {
		f, err := os.OpenFile(tmp, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		bw := bufio.NewWriter(f)
		if werr = write(bw); werr != nil && !errors.Is(werr, flows.ErrIncomplete) {
			return werr
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		return f.Close()
	})
	switch {
	case err == nil:
		return werr
	case errors.Is(err, werr):
		return err
	}
	return fmt.Errorf("write the report %s: %w", path, err)
}
