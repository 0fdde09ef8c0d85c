// Command k8sschema writes kubeconform JSON schemas for offline, strict
// validation: one file per Kubernetes kind from the OpenAPI v2 spec that the
// k8s.io/kubernetes module ships (api/openapi-spec/swagger.json), and one per
// CRD version from CustomResourceDefinition manifests (their openAPIV3Schema).
// It also copies the CRD manifests, for tests that install them.
//
// Usage: k8sschema -swagger swagger.json -crds DIR -crd NAME... -out DIR
//
// Files are named as kubeconform's {{.ResourceKind}}{{.KindSuffix}}.json
// template expects: deployment-apps-v1.json, service-v1.json,
// servicemonitor-monitoring-v1.json. "Strict" means every object schema that
// lists properties rejects others (additionalProperties: false), as
// kubeconform's published -strict schemas do, so a misspelled field fails.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "k8sschema:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("k8sschema", flag.ContinueOnError)
	swagger := fs.String("swagger", "", "Kubernetes OpenAPI v2 spec (swagger.json)")
	crdDir := fs.String("crds", "", "directory of CustomResourceDefinition manifests")
	var crds stringList
	fs.Var(&crds, "crd", "CRD manifest file name in -crds to convert (repeatable)")
	out := fs.String("out", "", "output directory (schemas go to OUT/kubernetes, CRD manifests to OUT/crds)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *swagger == "" || *out == "" {
		return errors.New("-swagger and -out are required")
	}
	schemaDir := filepath.Join(*out, "kubernetes")
	if err := os.MkdirAll(schemaDir, 0o755); err != nil {
		return err
	}
	n, err := writeKubernetesSchemas(*swagger, schemaDir)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "wrote %d Kubernetes kind schemas to %s\n", n, schemaDir)
	if len(crds) == 0 {
		return nil
	}
	manifestDir := filepath.Join(*out, "crds")
	if err := os.MkdirAll(manifestDir, 0o755); err != nil {
		return err
	}
	for _, name := range crds {
		src := filepath.Join(*crdDir, name)
		data, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		m, err := writeCRDSchemas(data, schemaDir)
		if err != nil {
			return fmt.Errorf("%s: %w", src, err)
		}
		if err := os.WriteFile(filepath.Join(manifestDir, name), data, 0o644); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "wrote %d schemas from %s\n", m, name)
	}
	return nil
}

// writeKubernetesSchemas writes _definitions.json (every definition, made
// strict) and one small file per group/version/kind that refers into it.
func writeKubernetesSchemas(swaggerFile, dir string) (int, error) {
	raw, err := os.ReadFile(swaggerFile)
	if err != nil {
		return 0, err
	}
	var spec struct {
		Definitions map[string]map[string]any `json:"definitions"`
	}
	if err := json.Unmarshal(raw, &spec); err != nil {
		return 0, fmt.Errorf("%s: %w", swaggerFile, err)
	}
	if len(spec.Definitions) == 0 {
		return 0, fmt.Errorf("%s has no definitions", swaggerFile)
	}
	defs := make(map[string]any, len(spec.Definitions))
	for name, d := range spec.Definitions {
		if strings.HasSuffix(name, ".api.resource.Quantity") {
			// A quantity is written as "500m" or as a bare number in YAML.
			defs[name] = oneOfTypes("string", "number")
			continue
		}
		defs[name] = strictify(d)
	}
	if err := writeJSON(filepath.Join(dir, "_definitions.json"), map[string]any{"definitions": defs}); err != nil {
		return 0, err
	}
	n := 0
	for name, d := range spec.Definitions {
		gvks, _ := d["x-kubernetes-group-version-kind"].([]any)
		for _, g := range gvks {
			gvk, _ := g.(map[string]any)
			group, _ := gvk["group"].(string)
			version, _ := gvk["version"].(string)
			kind, _ := gvk["kind"].(string)
			if version == "" || kind == "" {
				return n, fmt.Errorf("definition %s has an incomplete group-version-kind %v", name, gvk)
			}
			ref := map[string]any{"$ref": "_definitions.json#/definitions/" + name}
			if err := writeJSON(filepath.Join(dir, fileName(kind, group, version)), ref); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, nil
}

// crd is the part of a CustomResourceDefinition read here.
type crd struct {
	Kind string `yaml:"kind"`
	Spec struct {
		Group string `yaml:"group"`
		Names struct {
			Kind string `yaml:"kind"`
		} `yaml:"names"`
		Versions []struct {
			Name   string `yaml:"name"`
			Schema struct {
				OpenAPIV3Schema map[string]any `yaml:"openAPIV3Schema"`
			} `yaml:"schema"`
		} `yaml:"versions"`
	} `yaml:"spec"`
}

// writeCRDSchemas writes one strict schema per version of the CRD.
func writeCRDSchemas(data []byte, dir string) (int, error) {
	var c crd
	if err := yaml.Unmarshal(data, &c); err != nil {
		return 0, err
	}
	if c.Kind != "CustomResourceDefinition" {
		return 0, fmt.Errorf("kind is %q, want CustomResourceDefinition", c.Kind)
	}
	n := 0
	for _, v := range c.Spec.Versions {
		if v.Schema.OpenAPIV3Schema == nil {
			return n, fmt.Errorf("version %s has no openAPIV3Schema", v.Name)
		}
		s := strictify(v.Schema.OpenAPIV3Schema)
		if err := writeJSON(filepath.Join(dir, fileName(c.Spec.Names.Kind, c.Spec.Group, v.Name)), s); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// fileName is kubeconform's {{.ResourceKind}}{{.KindSuffix}}.json: the
// lower-cased kind, then the group's first DNS label (none for the core
// group), then the version.
func fileName(kind, group, version string) string {
	suffix := "-" + strings.ToLower(version)
	if group != "" {
		suffix = "-" + strings.ToLower(strings.Split(group, ".")[0]) + suffix
	}
	return strings.ToLower(kind) + suffix + ".json"
}

// strictify rewrites a schema in place for JSON-schema validation of YAML
// manifests: int-or-string fields accept both, and every object that lists
// its properties rejects unknown ones unless it preserves unknown fields.
func strictify(v any) any {
	switch t := v.(type) {
	case map[string]any:
		if f, _ := t["format"].(string); f == "int-or-string" {
			return oneOfTypes("string", "integer")
		}
		if ios, _ := t["x-kubernetes-int-or-string"].(bool); ios {
			return oneOfTypes("string", "integer")
		}
		for k, c := range t {
			if k == "properties" {
				if props, ok := c.(map[string]any); ok {
					for name, p := range props {
						props[name] = strictify(p)
					}
				}
				continue
			}
			t[k] = strictify(c)
		}
		_, hasProps := t["properties"]
		_, hasAdditional := t["additionalProperties"]
		preserve, _ := t["x-kubernetes-preserve-unknown-fields"].(bool)
		if hasProps && !hasAdditional && !preserve {
			t["additionalProperties"] = false
		}
		return t
	case []any:
		for i := range t {
			t[i] = strictify(t[i])
		}
	}
	return v
}

func oneOfTypes(types ...string) map[string]any {
	var alts []any
	for _, t := range types {
		alts = append(alts, map[string]any{"type": t})
	}
	return map[string]any{"oneOf": alts}
}

func writeJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, b, 0o644)
}
