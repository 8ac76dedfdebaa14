package envvar

import (
	"strings"
	"testing"
)

// TestCredentialsAreSecret: the table's credentials are marked Secret (goaccel env never
// shows their values), and a new variable whose name says it holds one is caught here.
func TestCredentialsAreSecret(t *testing.T) {
	for _, v := range []*Var{JobSecret.Var, HFToken.Var, HFHubToken.Var} {
		if !v.Secret {
			t.Errorf("%s is not marked Secret", v.Name)
		}
	}
	for _, v := range All() {
		for _, word := range []string{"SECRET", "TOKEN", "PASSWORD", "PASSWD", "CREDENTIAL", "API_KEY"} {
			if strings.Contains(v.Name, word) && !v.Secret {
				t.Errorf("%s: its name says it holds a credential, but it is not marked Secret (secret() in table.go)", v.Name)
			}
		}
	}
}
