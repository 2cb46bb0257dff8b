package main

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// A status whose bounding set lacks CAP_SYS_RESOURCE (24, this machine's) and whose permitted set lacks CAP_BPF
// (39): both go, nothing else.
func TestMissingCapsIsBoundingAndPermitted(t *testing.T) {
	status := "Name:\tx\nCapInh:\t0000000000000000\nCapPrm:\t000001ffffffffff\nCapEff:\t000001ffffffffff\n" +
		"CapBnd:\t000001fffeffffff\n"
	status = strings.Replace(status, "CapPrm:\t000001ffffffffff", "CapPrm:\t0000017fffffffff", 1)
	got, err := missingCaps(status)
	if err != nil || !reflect.DeepEqual(got, []string{"CAP_SYS_RESOURCE", "CAP_BPF"}) {
		t.Fatalf("missingCaps = %v, %v", got, err)
	}
	if got, _ := missingCaps("CapPrm:\t000001ffffffffff\nCapBnd:\t000001ffffffffff\n"); len(got) != 0 {
		t.Fatalf("all 41 held: %v", got)
	}
	if _, err := missingCaps("CapPrm:\t1\n"); err == nil {
		t.Fatal("no CapBnd: an error")
	}
}

func TestSubcommandSkipsGlobalOptionsAndFindsTheValue(t *testing.T) {
	cases := []struct {
		args        []string
		cmd, bundle string
	}{
		{[]string{"--root", "/run/x", "--log", "/l", "--log-format", "json", "--debug", "create", "--bundle", "/b", "c"}, "create", "/b"},
		{[]string{"--systemd-cgroup", "--root=/r", "run", "-b", "/b2", "c"}, "run", "/b2"},
		{[]string{"create", "--bundle=/b3", "c"}, "create", "/b3"},
		{[]string{"-v", "create", "-bundle", "/b4"}, "create", "/b4"},
		{[]string{"create", "c"}, "create", ""},
		{[]string{"--root", "/r"}, "", ""},
	}
	for _, c := range cases {
		cmd, i := subcommand(c.args)
		if cmd != c.cmd || optValue(c.args, i, "bundle", "b") != c.bundle {
			t.Errorf("%v: %q %q", c.args, cmd, optValue(c.args, i, "bundle", "b"))
		}
	}
	args := []string{"exec", "--process", "/p.json", "--detach", "c"}
	if cmd, i := subcommand(args); cmd != "exec" || optValue(args, i, "process", "p") != "/p.json" {
		t.Fatal("exec --process")
	}
}

func TestDropCapsKeepsTheRestOfTheDocument(t *testing.T) {
	in := `{"ociVersion":"1.0.2","process":{"args":["sh"],"capabilities":{"bounding":["CAP_CHOWN","CAP_SYS_RESOURCE",` +
		`"CAP_FUTURE_THING"],"effective":["CAP_SYS_RESOURCE"],"note":"CAP_SYS_RESOURCE"},"rlimit":1.50},"z":"<&>"}`
	out, err := dropCaps([]byte(in), []string{"process", "capabilities"}, []string{"CAP_SYS_RESOURCE"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"ociVersion":"1.0.2","process":{"args":["sh"],"capabilities":{"bounding":["CAP_CHOWN",` +
		`"CAP_FUTURE_THING"],"effective":[],"note":"CAP_SYS_RESOURCE"},"rlimit":1.50},"z":"<&>"}`
	var compact strings.Builder
	var v any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(out), "\n") { // two-space indentation, jq's
		compact.WriteString(strings.TrimLeft(strings.Replace(line, "\": ", "\":", 1), " "))
	}
	if compact.String() != want || !strings.HasPrefix(string(out), "{\n  \"ociVersion\": \"1.0.2\",\n") {
		t.Fatalf("got\n%s", out)
	}
	// nothing at the path: nothing changes; another type on the way: an error; not JSON: an error
	if out, err := dropCaps([]byte(`{"process":null}`), []string{"process", "capabilities"}, []string{"CAP_X"}); err != nil || string(out) != "{\n  \"process\": null\n}\n" {
		t.Fatalf("null: %q %v", out, err)
	}
	if _, err := dropCaps([]byte(`{"process":"x"}`), []string{"process", "capabilities"}, []string{"CAP_X"}); err == nil {
		t.Fatal("a string on the path: an error")
	}
	if _, err := dropCaps([]byte(`{"process":`), []string{"process"}, []string{"CAP_X"}); err == nil {
		t.Fatal("not JSON: an error")
	}
}
