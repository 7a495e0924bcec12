package main

import (
	"fmt"
	"os"

	"golang.org/x/term"

	"github.com/etcdpvc/etcdpvc/internal/textout"
)

// warnPrefix starts every warning line.
const warnPrefix = "etcdpvc: warning: "

// warn prints a warning on stderr. On a terminal a message wider than the
// terminal wraps at spaces, each further line indented under the text;
// anywhere else it stays one line, so that it can be grepped and a log
// keeps it whole.
func (e *env) warn(msg string) {
	fmt.Fprint(e.stderr, textout.Wrap(warnPrefix, textout.Escape(msg), terminalWidth(e.rawStderr)))
}

// ansiTerminal reports whether w is a terminal that takes ANSI
// sequences (colours, the progress line's erase): not one whose TERM is
// dumb.
func (e *env) ansiTerminal(w any) bool {
	return isTerminal(w) && e.getenv("TERM") != "dumb"
}

// terminalWidth returns w's width in columns when it is a terminal, else 0.
func terminalWidth(w any) int {
	f, ok := w.(*os.File)
	if !ok || !isTerminal(f) {
		return 0
	}
	cols, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return 0
	}
	return cols
}
