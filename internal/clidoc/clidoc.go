// Package clidoc renders a command-line reference in Markdown from the
// same declarations the help is printed from (urfave/cli flags): a table
// of commands, flag tables, and one section per command, so that the
// reference and the help cannot disagree.
package clidoc

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
)

// Command is what the reference says of one command.
type Command struct {
	Name, Usage, ArgsUsage string
	// Desc is the description: paragraphs separated by blank lines,
	// wrapped as in the help (the lines of a paragraph are joined).
	Desc     string
	Flags    []cli.Flag
	Examples string
}

// Index writes the table of commands, each linked to its section.
func Index(b *strings.Builder, program string, cmds []Command) {
	b.WriteString("| command | what it does |\n|---|---|\n")
	for _, c := range cmds {
		fmt.Fprintf(b, "| [`%s`](#%s-%s) | %s |\n", c.Name, program, c.Name, Text(c.Usage))
	}
}

// Flags writes a table of flags: names, default, meaning.
func Flags(b *strings.Builder, flags []cli.Flag) {
	b.WriteString("| flag | default | meaning |\n|---|---|---|\n")
	for _, f := range flags {
		var names []string
		for _, n := range f.Names() {
			if len(n) == 1 {
				names = append(names, "`-"+n+"`")
			} else {
				names = append(names, "`--"+n+"`")
			}
		}
		def, usage := "", ""
		if d, ok := f.(cli.DocGenerationFlag); ok {
			usage = d.GetUsage()
			if d.TakesValue() {
				def = strings.Trim(d.GetDefaultText(), `"`)
			}
		}
		if def != "" {
			def = "`" + def + "`"
		}
		fmt.Fprintf(b, "| %s | %s | %s |\n", strings.Join(names, ", "), def, Text(usage))
	}
}

// Section writes a command's section: its usage as a sentence, synopsis,
// description, flags (followed by flagsNote, when it has some) and
// examples.
func Section(b *strings.Builder, program string, c Command, flagsNote string) {
	fmt.Fprintf(b, "\n## %s %s\n\n%s.\n\n", program, c.Name, Text(upperFirst(c.Usage)))
	synopsis := program + " " + c.Name + " [flags]"
	if c.ArgsUsage != "" {
		synopsis += " " + c.ArgsUsage
	}
	fmt.Fprintf(b, "```\n%s\n```\n\n", synopsis)
	for _, para := range strings.Split(strings.TrimSpace(c.Desc), "\n\n") {
		fmt.Fprintf(b, "%s\n\n", Text(strings.Join(strings.Fields(para), " ")))
	}
	if len(c.Flags) > 0 {
		Flags(b, c.Flags)
		b.WriteString(flagsNote)
	}
	if c.Examples != "" {
		fmt.Fprintf(b, "Examples:\n\n```sh\n%s\n```\n", strings.TrimSpace(c.Examples))
	}
}

// Text escapes what Markdown would take for markup outside code spans,
// and the table separator.
func Text(s string) string {
	parts := strings.Split(s, "`")
	r := strings.NewReplacer(`\`, `\\`, "*", `\*`, "<", "&lt;", ">", "&gt;", "|", `\|`)
	for i := 0; i < len(parts); i += 2 {
		parts[i] = r.Replace(parts[i])
	}
	return strings.Join(parts, "`")
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
