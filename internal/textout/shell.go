package textout

import "strings"

// ShellQuote quotes s for a POSIX shell when it holds anything but
// letters, digits and -_./:=@,+%, so that a printed command (an undo
// line, a recover command) works pasted into a new shell.
func ShellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@,+%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
