package textout

import "strings"

// Wrap renders a message after prefix for a screen of width columns (0:
// no wrapping), ending with a newline: the message broken at spaces so
// that no line is wider than width, further lines (and further
// paragraphs, after a "\n") indented by the prefix's width. A word longer
// than a line stands alone on its line, whole. A screen too narrow to wrap
// usefully (at most 20 columns beyond the prefix) gets one line.
func Wrap(prefix, msg string, width int) string {
	indent := strings.Repeat(" ", len(prefix))
	if width <= len(prefix)+20 {
		return prefix + msg + "\n"
	}
	var b strings.Builder
	for i, para := range strings.Split(msg, "\n") {
		line := prefix
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
