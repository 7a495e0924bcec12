package main

import (
	"fmt"
	"os"
	"strings"

	"golang.org/x/term"
)

// warnPrefix starts every warning line.
const warnPrefix = "etcdpvc: warning: "

// warn prints a warning on stderr. On a terminal a message wider than the
// terminal wraps at spaces, each further line indented under the text;
// anywhere else it stays one line, so that it can be grepped and a log
// keeps it whole.
func (e *env) warn(msg string) {
	fmt.Fprint(e.stderr, wrapWarning(msg, terminalWidth(e.stderr)))
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

// wrapWarning renders a warning for a screen of width columns (0: no
// wrapping): the prefix, then the message broken at spaces so that no line
// is wider than width, further lines indented by the prefix's width. A
// word longer than a line stands alone on its line, whole.
func wrapWarning(msg string, width int) string {
	indent := strings.Repeat(" ", len(warnPrefix))
	if width <= len(warnPrefix)+20 {
		return warnPrefix + msg + "\n"
	}
	var b strings.Builder
	for i, para := range strings.Split(msg, "\n") {
		line := warnPrefix
		if i > 0 {
			line = indent
		}
		col, first := len(line), true
		b.WriteString(line)
		for _, word := range strings.Fields(para) {
			n := len([]rune(word))
			if !first && col+1+n > width {
				b.WriteString("\n" + indent)
				col, first = len(indent), true
			}
			if !first {
				b.WriteByte(' ')
				col++
			}
			b.WriteString(word)
			col += n
			first = false
		}
		b.WriteByte('\n')
	}
	return b.String()
}
