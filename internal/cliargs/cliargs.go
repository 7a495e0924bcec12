// Package cliargs reads a command line of a program with subcommands the
// way kubectl does: flags may come anywhere (before the command name,
// after it, after the positional arguments), kubectl's joined short forms
// (-ndemo, -oyaml) are split, and "--" ends the flags. The same parse
// serves the CLI, which reorders the line for its flag parser (urfave/cli
// stops at the first positional argument), and shell completion, which
// reads a partial line. It also words the usage errors of a mistyped flag
// or command (the nearest known name by edit distance), checks a command's
// arguments against its declaration (Args), and finds completion
// candidates (Completer over a Program).
package cliargs

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Grammar is what the parser knows of a program's flags.
type Grammar struct {
	// Values maps every flag name that may come before the command name
	// (the global flags and every command's) to whether it takes a value.
	Values map[string]bool
	// Command returns the flags of the command called name (global ones
	// included), each with whether it takes a value; ok is false when no
	// command has that name.
	Command func(name string) (values map[string]bool, ok bool)
	// Global reports whether a flag given before the command name stays
	// there (the others move after it).
	Global func(name string) bool
}

// Line is a command line as read: flags before the command name, the
// command, its flags and its positional arguments.
type Line struct {
	// Global are the global flags before the command name, with their
	// values; Moved the other flags given there.
	Global, Moved []string
	// Name is the command name as typed ("" when none); Known says
	// whether the grammar knows it.
	Name  string
	Known bool
	// After are the flags after the command name, with their values.
	After []string
	// Positional are the arguments ("--" ends the flags).
	Positional []string
	// Flags holds every flag given, by name as typed, with its value
	// ("true" for one without); the last one of a flag given more than
	// once.
	Flags map[string]string
	// Values holds every value of every flag given, by name as typed, in
	// the order given: a repeatable flag's values.
	Values map[string][]string
	// Pending is the flag that ends the line still waiting for its value
	// (a partial line only).
	Pending string
	// Words is the line with its joined short flags split.
	Words []string
}

// MissingValueError is a flag that takes a value but ends the line.
type MissingValueError struct{ Flag string }

func (e *MissingValueError) Error() string {
	return fmt.Sprintf("flag %s needs a value", Dashes(e.Flag))
}

// Parse reads args. On a partial line (being completed), a flag that takes
// a value and ends the line is Pending; otherwise it is a
// *MissingValueError. After an unknown command name, the rest of a full
// line is left positional as typed (the CLI reports the name); on a
// partial line the unknown word is read as positional.
func Parse(g Grammar, args []string, partial bool) (Line, error) {
	l := Line{Flags: map[string]string{}, Values: map[string][]string{}}
	args, err := SplitJoinedShort(args, g.Values, partial)
	if err != nil {
		return l, err
	}
	l.Words = args
	flags := g.Values
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" && l.Name != "" {
			l.Positional = append(l.Positional, args[i+1:]...)
			break
		}
		if strings.HasPrefix(a, "-") && a != "-" && a != "--" {
			name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
			group := []string{a}
			switch {
			case hasValue:
			case flags[name] && i+1 < len(args):
				i++
				value = args[i]
				group = append(group, value)
			case flags[name] && partial:
				l.Pending = name
				return l, nil
			default:
				value = "true"
			}
			l.Flags[name] = value
			l.Values[name] = append(l.Values[name], value)
			switch {
			case l.Name != "":
				l.After = append(l.After, group...)
			case g.Global(name):
				l.Global = append(l.Global, group...)
			default:
				l.Moved = append(l.Moved, group...)
			}
			continue
		}
		if l.Name == "" && len(l.Positional) == 0 {
			l.Name = a
			if values, ok := g.Command(a); ok {
				l.Known, flags = true, values
			}
			if !l.Known && !partial {
				l.Positional = args[i+1:]
				return l, nil
			}
			if !l.Known {
				l.Name = ""
				l.Positional = append(l.Positional, a)
			}
			continue
		}
		l.Positional = append(l.Positional, a)
	}
	return l, nil
}

// Reordered is the line with every flag (with its value) before the
// positional arguments of its command, which follow a "--": global flags,
// the command name, the flags given before it, those after it. Without a
// command name it is the flags; after an unknown one, the words as read.
func (l Line) Reordered() []string {
	if l.Name == "" {
		return append(l.Global, l.Moved...)
	}
	if !l.Known {
		return l.Words
	}
	out := append(append([]string{}, l.Global...), l.Name)
	out = append(append(out, l.Moved...), l.After...)
	if len(l.Positional) > 0 {
		out = append(out, "--")
		out = append(out, l.Positional...)
	}
	return out
}

// flagName returns the name of a flag argument and whether it carries its
// value (--name=value).
func flagName(a string) (string, bool) {
	name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
	return name, hasValue
}

// SplitJoinedShort splits kubectl's joined short forms, `-ndemo` into
// `-n demo` and `-oyaml` into `-o yaml`: a single-dash argument that is no
// flag's name, whose first letter is a one-letter flag taking a value
// (values maps flag names to whether they take one). `-n=demo` is left as
// it is. The value of a flag (`--password -nx`) and everything after "--"
// are left alone. A flag that takes a value but ends the line is a
// *MissingValueError, unless the line is partial.
func SplitJoinedShort(args []string, values map[string]bool, partial bool) ([]string, error) {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...), nil
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			out = append(out, a)
			continue
		}
		name, hasValue := flagName(a)
		if _, known := values[name]; !known && !hasValue && !strings.HasPrefix(a, "--") && len(name) > 1 && values[name[:1]] {
			out = append(out, "-"+name[:1], name[1:])
			continue
		}
		out = append(out, a)
		if values[name] && !hasValue {
			if i+1 >= len(args) && partial {
				break
			}
			if i+1 >= len(args) {
				return nil, &MissingValueError{Flag: name}
			}
			i++
			out = append(out, args[i])
		}
	}
	return out, nil
}

// Dashes spells a flag name as typed: -n, --namespace.
func Dashes(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// undefinedFlag matches the flag package's error for an unknown flag.
var undefinedFlag = regexp.MustCompile(`flag provided but not defined: -+(\S+)`)

// singleDashFlag matches the flag package's "flag -name".
var singleDashFlag = regexp.MustCompile(`flag -[\w-]+`)

// FlagError words a flag package parse error (msg) on one line: an unknown
// flag names the nearest of names ("unknown flag --namspace; did you mean
// --namespace?"); any other error names its flag as it is typed
// ("invalid value "x" for flag --rev: ...").
func FlagError(msg string, names []string) string {
	m := undefinedFlag.FindStringSubmatch(msg)
	if m == nil {
		return singleDashFlag.ReplaceAllStringFunc(msg, func(f string) string {
			return "flag " + Dashes(strings.TrimPrefix(f, "flag -"))
		})
	}
	out := "unknown flag " + Dashes(m[1])
	if near := Nearest(m[1], names); near != "" {
		out += "; did you mean " + Dashes(near) + "?"
	}
	return out
}

// UnknownCommand words the error for a command name that is not one of
// names, naming the nearest.
func UnknownCommand(name string, names []string) string {
	msg := fmt.Sprintf("unknown command %q", name)
	if near := Nearest(name, names); near != "" {
		msg += "; did you mean " + near + "?"
	}
	return msg
}

// Nearest returns the candidate closest to s in edit distance, if it is
// close enough to be a likely typo (at most a third of its length, and at
// most 3 edits), else "".
func Nearest(s string, candidates []string) string {
	best, bestD := "", 0
	for _, c := range candidates {
		d := EditDistance(s, c)
		if best == "" || d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" || bestD > 3 || bestD*3 > max(len(s), len(best)) {
		return ""
	}
	return best
}

// EditDistance is the Levenshtein distance between a and b, in bytes.
func EditDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Candidates returns the words that start with typed, each once, in their
// order, at most limit of them.
func Candidates(words []string, typed string, limit int) []string {
	var kept []string
	for _, w := range words {
		if strings.HasPrefix(w, typed) && !slices.Contains(kept, w) {
			kept = append(kept, w)
		}
	}
	if len(kept) > limit {
		kept = kept[:limit]
	}
	return kept
}
