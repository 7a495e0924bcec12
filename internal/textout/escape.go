package textout

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Escape returns s as a terminal may show it: every character a
// terminal could take as a control rather than print is written as its Go
// escape (ESC as \x1b, a carriage return as \r, a right-to-left override
// as \u202e, a byte that is not UTF-8 as \xff). Those are the characters
// strconv.IsPrint refuses: the C0 and C1 controls and DEL, the format
// characters (bidirectional and zero-width controls), line and paragraph
// separators and spaces other than the ASCII space. A newline and a tab
// are kept. A backslash is kept as it is.
func Escape(s string) string {
	if clean(s) {
		return s
	}
	var b strings.Builder
	appendEscaped(&b, s, false)
	return b.String()
}

// clean reports whether s holds nothing Escape changes: ASCII only, and
// no control but a newline or a tab.
func clean[T string | []byte](s T) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\n' && c != '\t') || c >= 0x7f {
			return false
		}
	}
	return true
}

// appendEscaped writes s escaped to b; an incomplete rune at its end is
// escaped byte by byte. json writes JSON's escapes (\u001b, \ud83d\udc4d)
// instead of Go's.
func appendEscaped(b *strings.Builder, s string, json bool) {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(b, `\x%02x`, s[i])
		case r == '\n' || r == '\t' || strconv.IsPrint(r):
			b.WriteRune(r)
		case json:
			for _, u := range utf16.Encode([]rune{r}) {
				fmt.Fprintf(b, `\u%04x`, u)
			}
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
}

// Escaper is an io.Writer that escapes what it writes as Escape does,
// for the text a command prints: whatever a printer forgets, no stored
// byte reaches a terminal as a control sequence. A rune split between two
// writes is held until the next one; Flush writes out what is held.
type Escaper struct {
	w       io.Writer
	json    bool
	pending []byte
}

// NewEscaper returns an Escaper writing to w.
func NewEscaper(w io.Writer) *Escaper { return &Escaper{w: w} }

// NewJSONEscaper returns an Escaper for JSON text: it writes the
// characters Escape escapes as JSON's \u escapes, which leave the
// strings they occur in the same (encoding/json writes DEL, the C1
// controls and the bidirectional ones raw). Outside a string JSON holds
// no such character.
func NewJSONEscaper(w io.Writer) *Escaper { return &Escaper{w: w, json: true} }

// Unwrap returns the writer written to, to ask whether it is a terminal.
func (e *Escaper) Unwrap() io.Writer { return e.w }

// Write escapes p and writes it; it returns len(p) when the escaped text
// was written whole.
func (e *Escaper) Write(p []byte) (int, error) {
	if len(e.pending) == 0 && clean(p) {
		return e.w.Write(p)
	}
	buf := append(e.pending, p...)
	e.pending = nil
	// Hold an incomplete rune at the end for the next write.
	for k := 1; k < utf8.UTFMax && k <= len(buf); k++ {
		if c := buf[len(buf)-k]; utf8.RuneStart(c) {
			if !utf8.FullRune(buf[len(buf)-k:]) {
				e.pending = append([]byte(nil), buf[len(buf)-k:]...)
				buf = buf[:len(buf)-k]
			}
			break
		}
	}
	var b strings.Builder
	appendEscaped(&b, string(buf), e.json)
	if _, err := io.WriteString(e.w, b.String()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes out, escaped, the incomplete rune a last write ended with.
func (e *Escaper) Flush() error {
	if len(e.pending) == 0 {
		return nil
	}
	var b strings.Builder
	appendEscaped(&b, string(e.pending), e.json)
	e.pending = nil
	_, err := io.WriteString(e.w, b.String())
	return err
}
