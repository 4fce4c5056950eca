package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestServingDeployment(t *testing.T) {
	tests := []struct {
		env     map[string]string
		want    Deployment
		wantErr string
	}{
		{env: nil, want: Production},
		{env: map[string]string{"ASSISTANT_DEPLOYMENT": "develop"}, want: Develop},
		{env: map[string]string{"ASSISTANT_DEPLOYMENT": " Develop "}, want: Develop},
		{env: map[string]string{"OSA_DEPLOYMENT": "develop"}, want: Develop},
		{env: map[string]string{"ASSISTANT_DEPLOYMENT": "   "}, want: Production},
		{env: map[string]string{"ASSISTANT_DEPLOYMENT": "staging"}, wantErr: `ASSISTANT_DEPLOYMENT="staging"; must be one of (production, develop)`},
		{env: map[string]string{"OSA_DEPLOYMENT": "prod"}, wantErr: `OSA_DEPLOYMENT="prod"`},
		{env: map[string]string{"ASSISTANT_BASE_PATH": "/osa-dev"}, want: Develop},
		{env: map[string]string{"ASSISTANT_BASE_PATH": "/osa-dev/"}, want: Develop},
		{env: map[string]string{"ROOT_PATH": " /osa-dev "}, want: Develop},
		{env: map[string]string{"ROOT_PATH": "/osa"}, want: Production},
		{env: map[string]string{"ROOT_PATH": "/osa-dev2"}, want: Production},
		{env: map[string]string{"ROOT_PATH": "/osa-dev/x"}, want: Production},
		// The deployment variable wins over the base path in both directions.
		{env: map[string]string{"ASSISTANT_DEPLOYMENT": "production", "ROOT_PATH": "/osa-dev"}, want: Production},
		{env: map[string]string{"OSA_DEPLOYMENT": "develop", "ROOT_PATH": "/osa"}, want: Develop},
		// Our name wins over the reference's alias.
		{env: map[string]string{"ASSISTANT_DEPLOYMENT": "production", "OSA_DEPLOYMENT": "develop"}, want: Production},
	}
	for _, tc := range tests {
		got, err := ServingDeployment(envOf(tc.env))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("env %v: err = %v, want %q", tc.env, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("env %v: got %q, %v; want %q", tc.env, got, err, tc.want)
		}
	}
}

func TestClientToolsDisabled(t *testing.T) {
	for _, v := range []string{"1", "true", "True", "YES", "on", " on "} {
		for _, name := range []string{"ASSISTANT_CLIENT_TOOLS_DISABLED", "OSA_CLIENT_TOOLS_DISABLED"} {
			if !ClientToolsDisabled(envOf(map[string]string{name: v}), "nemar") {
				t.Errorf("%s=%q: switch off, want on", name, v)
			}
		}
	}
	for _, v := range []string{"", "0", "false", "no", "off", "maybe"} {
		if ClientToolsDisabled(envOf(map[string]string{"ASSISTANT_CLIENT_TOOLS_DISABLED": v}), "nemar") {
			t.Errorf("%q: switch on, want off", v)
		}
	}
	list := envOf(map[string]string{"ASSISTANT_CLIENT_TOOLS_DISABLED": "hed, nemar"})
	if !ClientToolsDisabled(list, "nemar") || !ClientToolsDisabled(list, "hed") {
		t.Error("listed communities not switched off")
	}
	if ClientToolsDisabled(list, "bids") || ClientToolsDisabled(list, "nem") {
		t.Error("an unlisted community was switched off")
	}
}

// TestPerDeploymentCases covers the reference's per-deployment cases through the real loader.
func TestPerDeploymentCases(t *testing.T) {
	const head = "id: demo\nname: Demo\ndescription: d\nruntime:\n  python:\n    pyodide_version: \"0.29.5\"\n"
	tests := []struct {
		name, yaml string
		wantErr    string
		prod, dev  []string
	}{
		{name: "single", yaml: "    fetch_allow: [https://a.example.org/]\n", prod: []string{"https://a.example.org/"}, dev: []string{"https://a.example.org/"}},
		{name: "map", yaml: "    fetch_allow: {production: [https://a.example.org/], develop: [https://b.example.org/]}\n", prod: []string{"https://a.example.org/"}, dev: []string{"https://b.example.org/"}},
		{name: "absent", yaml: "", prod: []string{}, dev: []string{}},
		{name: "missing", yaml: "    fetch_allow: {production: []}\n", wantErr: `fetch_allow has no value for ["develop"]`},
		{name: "unknown", yaml: "    fetch_allow: {production: [], develop: [], prod: []}\n", wantErr: `fetch_allow names an unknown deployment ["prod"]; a per-deployment map`},
		{name: "both", yaml: "    fetch_allow: {production: [], staging: []}\n", wantErr: `names an unknown deployment ["staging"] and has no value for ["develop"]`},
		{name: "case", yaml: "    fetch_allow: {Production: [], develop: []}\n", wantErr: `unknown deployment ["Production"] and has no value for ["production"]`},
		{name: "empty", yaml: "    fetch_allow: {}\n", wantErr: `has no value for ["production", "develop"]`},
		{name: "bad value", yaml: "    fetch_allow: {production: [], develop: https://b.example.org/}\n", wantErr: `fetch_allow[develop]: must be a list`},
		{name: "null", yaml: "    fetch_allow: ~\n", wantErr: `fetch_allow: must be a list, got null`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, errs := decodeBytes("c.yaml", []byte(head+tc.yaml))
			if tc.wantErr != "" {
				if !strings.Contains(errs.Error(), tc.wantErr) {
					t.Fatalf("errors %q, want one containing %q", errs.Error(), tc.wantErr)
				}
				return
			}
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			fa := l.community.Runtime.Python.FetchAllow
			if diff := cmp.Diff(tc.prod, fa.Resolve(Production)); diff != "" {
				t.Errorf("production (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.dev, fa.Resolve(Develop)); diff != "" {
				t.Errorf("develop (-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzPerDeployment(f *testing.F) {
	f.Add("[https://a.example.org/]")
	f.Add("{production: [x], develop: [y]}")
	f.Add("{production: [x]}")
	f.Add("{develop: [], production: [], other: []}")
	f.Fuzz(func(t *testing.T, value string) {
		src := "id: demo\nname: Demo\ndescription: d\nruntime:\n  python:\n    pyodide_version: \"0.29.5\"\n    fetch_allow: " + value + "\n"
		l, errs := decodeBytes("c.yaml", []byte(src))
		if len(errs) > 0 || l == nil {
			return
		}
		fa := l.community.Runtime.Python.FetchAllow
		if !fa.IsMap() && !cmp.Equal(fa.Resolve(Production), fa.Resolve(Develop)) {
			t.Fatalf("a single value resolves differently per deployment: %q", value)
		}
		if fa.IsMap() && len(fa.values) != len(Deployments) {
			t.Fatalf("a map was accepted with keys %v", fa.values)
		}
	})
}
