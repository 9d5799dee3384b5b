// Package sam reads the SAM template (template.yaml) into the model the local
// stack and the component tests provision from, so that the template stays
// the single truth for resources everywhere.
package sam

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Template is the parsed template: its parameters, conditions and resources,
// with CloudFormation intrinsic functions kept as Intrinsic values.
type Template struct {
	Parameters map[string]Parameter
	Conditions map[string]any
	Globals    Globals
	Resources  map[string]Resource
	// Outputs are the stack's outputs: each one's Value, unresolved.
	Outputs map[string]any
}

// Parameter is a template parameter.
type Parameter struct {
	Type    string
	Default *string
}

// Globals holds the Function globals that the local stack applies.
type Globals struct {
	Timeout     int
	MemorySize  int
	Environment map[string]any
}

// Resource is one resource: its type and raw properties.
type Resource struct {
	LogicalID  string
	Type       string
	Condition  string
	Properties map[string]any
}

// Intrinsic is an unresolved CloudFormation function such as {"Ref": "X"}.
type Intrinsic struct {
	Name string // Ref, Fn::GetAtt, Fn::Sub, Fn::Join, Fn::If, Fn::Not, Fn::Equals, Fn::Select, Fn::Split
	Arg  any
}

// Load reads and parses a template file.
func Load(path string) (*Template, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read template: %w", err)
	}
	return Parse(b)
}

// Parse parses template YAML, including the short-form intrinsic tags.
func Parse(b []byte) (*Template, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("parse template: %w", err)
	}
	if len(doc.Content) == 0 {
		return nil, fmt.Errorf("parse template: empty document")
	}
	raw, err := decode(doc.Content[0])
	if err != nil {
		return nil, fmt.Errorf("parse template: %w", err)
	}
	top, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("parse template: top level is not a mapping")
	}
	t := &Template{
		Parameters: map[string]Parameter{},
		Conditions: mapOf(top["Conditions"]),
		Resources:  map[string]Resource{},
		Outputs:    map[string]any{},
		Globals:    Globals{Timeout: 3, MemorySize: 128},
	}
	for name, v := range mapOf(top["Parameters"]) {
		m := mapOf(v)
		p := Parameter{Type: fmt.Sprint(m["Type"])}
		if d, ok := m["Default"]; ok {
			s := scalar(d)
			p.Default = &s
		}
		t.Parameters[name] = p
	}
	fn := mapOf(mapOf(top["Globals"])["Function"])
	if v, ok := fn["Timeout"]; ok {
		t.Globals.Timeout = atoi(v)
	}
	if v, ok := fn["MemorySize"]; ok {
		t.Globals.MemorySize = atoi(v)
	}
	t.Globals.Environment = mapOf(mapOf(fn["Environment"])["Variables"])
	for id, v := range mapOf(top["Resources"]) {
		m := mapOf(v)
		r := Resource{LogicalID: id, Type: fmt.Sprint(m["Type"]), Properties: mapOf(m["Properties"])}
		if c, ok := m["Condition"].(string); ok {
			r.Condition = c
		}
		t.Resources[id] = r
	}
	for name, v := range mapOf(top["Outputs"]) {
		t.Outputs[name] = mapOf(v)["Value"]
	}
	return t, nil
}

// OfType returns the resources of one type, sorted by logical id.
func (t *Template) OfType(typ string) []Resource {
	var out []Resource
	for _, r := range t.Resources {
		if r.Type == typ {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LogicalID < out[j].LogicalID })
	return out
}

var shortTags = map[string]string{
	"!Ref": "Ref", "!GetAtt": "Fn::GetAtt", "!Sub": "Fn::Sub", "!Join": "Fn::Join",
	"!If": "Fn::If", "!Not": "Fn::Not", "!Equals": "Fn::Equals", "!Select": "Fn::Select",
	"!Split": "Fn::Split", "!And": "Fn::And", "!Or": "Fn::Or", "!Condition": "Condition",
}

func decode(n *yaml.Node) (any, error) {
	if name, ok := shortTags[n.Tag]; ok {
		inner := *n
		inner.Tag = ""
		switch n.Kind {
		case yaml.ScalarNode:
			inner.Tag = "!!str"
		case yaml.SequenceNode:
			inner.Tag = "!!seq"
		case yaml.MappingNode:
			inner.Tag = "!!map"
		}
		arg, err := decode(&inner)
		if err != nil {
			return nil, err
		}
		if name == "Fn::GetAtt" {
			if s, ok := arg.(string); ok {
				parts := strings.SplitN(s, ".", 2)
				arg = []any{parts[0], parts[len(parts)-1]}
			}
		}
		return Intrinsic{Name: name, Arg: arg}, nil
	}
	switch n.Kind {
	case yaml.ScalarNode:
		return n.Value, nil
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := decode(c)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			v, err := decode(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			out[n.Content[i].Value] = v
		}
		// The long form {"Ref": "X"} / {"Fn::GetAtt": [...]} is the same function.
		if len(out) == 1 {
			for k, v := range out {
				if k == "Ref" || k == "Condition" || strings.HasPrefix(k, "Fn::") {
					return Intrinsic{Name: k, Arg: v}, nil
				}
			}
		}
		return out, nil
	case yaml.AliasNode:
		return decode(n.Alias)
	}
	return nil, fmt.Errorf("unsupported YAML node at line %d", n.Line)
}

func mapOf(v any) map[string]any {
	if m, ok := v.(map[string]any); ok {
		return m
	}
	return map[string]any{}
}

func scalar(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return fmt.Sprint(v)
}

func atoi(v any) int {
	n, _ := strconv.Atoi(scalar(v))
	return n
}
