package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/internal/envvar"
)

// TestEnvHidesSecrets: `goaccel env`, whose output goes into bug reports, says of the table's
// secret variables (the job secret, the Hub tokens) only whether they are set, in the text
// and in --json; their values appear nowhere.
func TestEnvHidesSecrets(t *testing.T) {
	values := map[string]string{
		envvar.JobSecret.Name:          "job-secret-0123456789abcdef",
		"HF_TOKEN":                     "hf_tokenvalue0123456789",
		"HUGGING_FACE_HUB_TOKEN":       "hf_oldtokenvalue98765",
		envvar.Find("GROUP_RANK").Name: "1",
	}
	for name, value := range values {
		t.Setenv(name, value)
	}
	code, out, errOut := runCmd("env")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	code, js, errOut := runCmd("env", "--json")
	if code != 0 {
		t.Fatalf("env --json: exit %d: %s", code, errOut)
	}
	var rep envReport
	if err := json.Unmarshal([]byte(js), &rep); err != nil {
		t.Fatal(err)
	}
	byName := map[string]envVar{}
	for _, e := range rep.Env {
		byName[e.Name] = e
	}
	for name, value := range values {
		v := envvar.Find(name)
		if v == nil {
			t.Errorf("%s is not in the table", name)
			continue
		}
		e := byName[name]
		if name == "GROUP_RANK" {
			if v.Secret || e.Secret || e.Value == nil || *e.Value != value || !e.Set {
				t.Errorf("GROUP_RANK, no secret: %+v", e)
			}
			continue
		}
		if !v.Secret {
			t.Errorf("%s is not marked Secret in internal/envvar/table.go", name)
		}
		for what, text := range map[string]string{"text": out, "--json": js} {
			if strings.Contains(text, value) {
				t.Errorf("env %s shows the value of %s", what, name)
			}
		}
		if want := name + "=(set, not shown)  "; !strings.Contains(out, want) {
			t.Errorf("env text misses %q", want)
		}
		if e.Value != nil || !e.Set || !e.Secret {
			t.Errorf("env --json: %s = %+v, want set and secret without a value", name, e)
		}
	}
	t.Setenv(envvar.JobSecret.Name, "")
	if _, out, _ := runCmd("env"); !strings.Contains(out, envvar.JobSecret.Name+"=(set, not shown)  ") {
		t.Errorf("an empty secret is set all the same:\n%s", out)
	}
}
