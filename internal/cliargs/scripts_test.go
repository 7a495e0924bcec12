package cliargs

import (
	"strings"
	"testing"
)

func TestCompletionScripts(t *testing.T) {
	scripts := CompletionScripts("prog")
	for shell, want := range map[string][]string{
		"bash": {"complete -o default -F _prog prog\n", `"${words[0]}" __complete -- `},
		"zsh":  {"#compdef prog\n", "compdef _prog prog\n", `"${words[1]}" __complete -- `, "_files"},
		"fish": {"complete -c prog -f -a '(__prog_complete)'\n", "$tokens[1] __complete -- $tokens $current", "__fish_complete_path"},
	} {
		s, ok := scripts[shell]
		if !ok {
			t.Errorf("no %s script", shell)
			continue
		}
		if strings.Contains(s, "PROGRAM") {
			t.Errorf("%s script still names PROGRAM:\n%s", shell, s)
		}
		for _, w := range want {
			if !strings.Contains(s, w) {
				t.Errorf("%s script has no %q:\n%s", shell, w, s)
			}
		}
	}
	if len(scripts) != 3 {
		t.Errorf("%d scripts, want bash, zsh and fish", len(scripts))
	}
}
