package textout

import (
	"strings"
	"testing"
)

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"www-web-0":                      "www-web-0",
		"é ü 日本":                         "é ü 日本",
		"line\nnext\tcol":                "line\nnext\tcol",
		"\x1b[2Jcleared":                 `\x1b[2Jcleared`,
		"\x1b]8;;http://x\x1b\\link\x07": `\x1b]8;;http://x\x1b\link\a`,
		"over\rwrite":                    `over\rwrite`,
		"del\x7f":                        `del\x7f`,
		"c1 \u009b2J":                    `c1 \u009b2J`,
		"bidi \u202eevil\u2066":          `bidi \u202eevil\u2066`,
		"zero\u200bwidth\ufeff":          `zero\u200bwidth\ufeff`,
		"bad \xff\xc3":                   `bad \xff\xc3`,
		`back\slash`:                     `back\slash`,
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestEscaper writes text in pieces of every size: a rune split between
// writes is printed whole, a control is escaped wherever it falls.
func TestEscaper(t *testing.T) {
	in := "name é\x1b[2J 日本\u202e \xff end é"
	want := Escape(in)
	for size := 1; size <= len(in); size++ {
		var b strings.Builder
		e := NewEscaper(&b)
		for i := 0; i < len(in); i += size {
			p := in[i:min(i+size, len(in))]
			if n, err := e.Write([]byte(p)); n != len(p) || err != nil {
				t.Fatalf("size %d: Write = %d, %v", size, n, err)
			}
		}
		if err := e.Flush(); err != nil {
			t.Fatal(err)
		}
		if b.String() != want {
			t.Errorf("size %d: got %s, want %s", size, b.String(), want)
		}
	}
	var b strings.Builder
	e := NewEscaper(&b)
	e.Write([]byte("cut \xe6\x97"))
	e.Flush()
	if b.String() != `cut \xe6\x97` {
		t.Errorf("an incomplete rune at the end: got %s", b.String())
	}
}

// TestJSONEscaper writes JSON's escapes, which decode to the same string.
func TestJSONEscaper(t *testing.T) {
	var b strings.Builder
	e := NewJSONEscaper(&b)
	e.Write([]byte("{\"k\": \"\u009b2J\u202e\x7f \U000e0041 é\"}\n"))
	e.Flush()
	if want := `{"k": "\u009b2J\u202e\u007f \udb40\udc41 é"}` + "\n"; b.String() != want {
		t.Errorf("got %s, want %s", b.String(), want)
	}
}
