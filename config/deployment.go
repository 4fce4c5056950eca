package config

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// A Deployment names one of the two places a community is served from. Three config fields may
// hold a different value for each (config.md §6).
type Deployment string

// The deployments, in the reference's order.
const (
	Production Deployment = "production"
	Develop    Deployment = "develop"
)

// Deployments lists every deployment in order.
var Deployments = []Deployment{Production, Develop}

// ServingDeployment decides which deployment this process serves, from the environment:
// ASSISTANT_DEPLOYMENT (alias OSA_DEPLOYMENT), else develop when the base path
// (ASSISTANT_BASE_PATH, alias ROOT_PATH) is /osa-dev, else production. Values are trimmed and
// lower-cased; any other non-blank deployment name is an error.
func ServingDeployment(getenv func(string) string) (Deployment, error) {
	for _, name := range []string{"ASSISTANT_DEPLOYMENT", "OSA_DEPLOYMENT"} {
		v := strings.ToLower(strings.TrimSpace(getenv(name)))
		if v == "" {
			continue
		}
		if d := Deployment(v); slices.Contains(Deployments, d) {
			return d, nil
		}
		return "", fmt.Errorf("%s=%q; must be one of (production, develop)", name, v)
	}
	for _, name := range []string{"ASSISTANT_BASE_PATH", "ROOT_PATH"} {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			continue
		}
		if strings.TrimRight(v, "/") == "/osa-dev" {
			return Develop, nil
		}
		return Production, nil
	}
	return Production, nil
}

// ClientToolsDisabled reports whether the client-tool kill switch is on for community id. It
// reads ASSISTANT_CLIENT_TOOLS_DISABLED (alias OSA_CLIENT_TOOLS_DISABLED) on every call, so an
// operator can flip it without a restart. The switch is on for everyone when the value is
// 1, true, yes or on (any case, surrounding spaces ignored); it may instead be a comma-separated
// list of community ids, switching off just those.
func ClientToolsDisabled(getenv func(string) string, id string) bool {
	for _, name := range []string{"ASSISTANT_CLIENT_TOOLS_DISABLED", "OSA_CLIENT_TOOLS_DISABLED"} {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			continue
		}
		switch strings.ToLower(v) {
		case "1", "true", "yes", "on":
			return true
		}
		for item := range strings.SplitSeq(v, ",") {
			if strings.TrimSpace(item) == id {
				return true
			}
		}
		return false
	}
	return false
}

// PerDeployment is a value that is either the same for every deployment or given once for each
// (a mapping with exactly the keys production and develop). T must not itself be a map, or the
// two forms could not be told apart.
type PerDeployment[T any] struct {
	values map[Deployment]T // nil for a single value
	single T
}

// Single returns a PerDeployment that has the same value everywhere.
func Single[T any](v T) PerDeployment[T] { return PerDeployment[T]{single: v} }

// Resolve returns the value for deployment dep.
func (p PerDeployment[T]) Resolve(dep Deployment) T {
	if p.values != nil {
		return p.values[dep]
	}
	return p.single
}

// IsMap reports whether the value was written as a per-deployment map.
func (p PerDeployment[T]) IsMap() bool { return p.values != nil }

// Each calls f for every deployment's value with the path suffix that names it ("" for a
// single value, "[develop]" for one side of a map), in deployment order.
func (p PerDeployment[T]) Each(f func(suffix string, dep Deployment, v T)) {
	if p.values == nil {
		f("", "", p.single)
		return
	}
	for _, d := range Deployments {
		f("["+string(d)+"]", d, p.values[d])
	}
}

func (p *PerDeployment[T]) decodeNode(d *decoder, n *yaml.Node, path string) {
	if n.Kind != yaml.MappingNode {
		d.decode(n, reflectValue(&p.single), path, false)
		return
	}
	// The key check runs before the values are looked at, so a misspelt deployment gets this
	// message rather than a type error about its value.
	field := path[strings.LastIndexAny(path, ".]")+1:]
	var unknown []string
	have := map[Deployment]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if slices.Contains(Deployments, Deployment(k.Value)) && k.Tag == "!!str" {
			have[Deployment(k.Value)] = n.Content[i+1]
		} else {
			unknown = append(unknown, strconv.Quote(k.Value))
		}
	}
	slices.Sort(unknown)
	var missing []string
	for _, dep := range Deployments {
		if have[dep] == nil {
			missing = append(missing, strconv.Quote(string(dep)))
		}
	}
	var problems []string
	if len(unknown) > 0 {
		problems = append(problems, "names an unknown deployment ["+strings.Join(unknown, ", ")+"]")
	}
	if len(missing) > 0 {
		problems = append(problems, "has no value for ["+strings.Join(missing, ", ")+"]")
	}
	if len(problems) > 0 {
		d.failAt(n, path, "%s %s; a per-deployment map names (production, develop)", field, strings.Join(problems, " and "))
		return
	}
	p.values = make(map[Deployment]T, len(Deployments))
	for _, dep := range Deployments {
		var v T
		sub := path + "[" + string(dep) + "]"
		d.decode(have[dep], reflectValue(&v), sub, false)
		p.values[dep] = v
	}
}

// DeploymentSpecific lists the fields of c written as per-deployment maps whose values differ.
func (c *Community) DeploymentSpecific() []string {
	var out []string
	if py := c.python(); py != nil {
		if py.FetchAllow.IsMap() && !slices.Equal(py.FetchAllow.Resolve(Production), py.FetchAllow.Resolve(Develop)) {
			out = append(out, "runtime.python.fetch_allow")
		}
		if py.Prelude != nil && py.Prelude.IsMap() && py.Prelude.Resolve(Production) != py.Prelude.Resolve(Develop) {
			out = append(out, "runtime.python.prelude")
		}
	}
	if c.Extensions != nil {
		for i, s := range c.Extensions.MCPServers {
			if s.URL != nil && s.URL.IsMap() && s.URL.Resolve(Production) != s.URL.Resolve(Develop) {
				out = append(out, fmt.Sprintf("extensions.mcp_servers[%d].url", i))
			}
		}
	}
	return out
}

// MarshalJSON writes the value as it was configured: the single value, or a map by deployment.
func (p PerDeployment[T]) MarshalJSON() ([]byte, error) {
	if p.values != nil {
		return json.Marshal(p.values)
	}
	return json.Marshal(p.single)
}
