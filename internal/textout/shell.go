package textout

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// ShellQuote quotes s for a POSIX shell when it holds anything but
// letters, digits and -_./:=@,+%, so that a printed command (an undo
// line, a recover command) works pasted into a new shell. A string
// holding a character Escape escapes (a stored key with ESC in it) is
// written $'…' with Escape's escapes, which the shell reads back as the
// same bytes (POSIX.1-2024, bash, zsh): the line stays printable and
// still names the key.
func ShellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@,+%", r))
	}) < 0 {
		return s
	}
	if strings.ContainsAny(s, "\n\t") || Escape(s) != s {
		return dollarQuote(s)
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// dollarQuote writes s as $'…': a quote and a backslash escaped, the
// characters Escape escapes (and newlines and tabs) as their escapes.
func dollarQuote(s string) string {
	var b strings.Builder
	b.WriteString("$'")
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[i])|0x100, 16)[1:])
		case r == '\'' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case strconv.IsPrint(r):
			b.WriteRune(r)
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	b.WriteByte('\'')
	return b.String()
}
