package tests

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kneewatch/kneewatch/config"
	"github.com/kneewatch/kneewatch/watch"
	"github.com/sethvargo/go-envconfig"
	"go.yaml.in/yaml/v3"
)

// manifests splits a multi-document render into objects.
func manifests(t *testing.T, rendered []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	dec := yaml.NewDecoder(bytes.NewReader(rendered))
	for {
		var obj map[string]any
		err := dec.Decode(&obj)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("rendered chart is not YAML: %v", err)
		}
		if obj != nil {
			out = append(out, obj)
		}
	}
}

// find returns the one object of kind (and name, unless ""), failing if
// there is not exactly one.
func find(t *testing.T, objs []map[string]any, kind, name string) map[string]any {
	t.Helper()
	var found []map[string]any
	for _, o := range objs {
		if o["kind"] == kind && (name == "" || dig(o, "metadata", "name") == name) {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("render has %d %s objects named %q, want 1", len(found), kind, name)
	}
	return found[0]
}

// workload returns the kneewatch Deployment, or its StatefulSet when
// sharded, failing unless there is exactly one of the two.
func workload(t *testing.T, objs []map[string]any) map[string]any {
	t.Helper()
	var found []map[string]any
	for _, o := range objs {
		if (o["kind"] == "Deployment" || o["kind"] == "StatefulSet") && dig(o, "metadata", "name") == "kneewatch" {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("render has %d kneewatch Deployments and StatefulSets, want 1", len(found))
	}
	return found[0]
}

// podEnv is the KNEEWATCH_* environment the workload's container gets, as
// the kubelet would resolve it for its last pod: a StatefulSet's pod-index
// label is replicas-1 there, the highest shard.
func podEnv(w map[string]any) map[string]string {
	out := map[string]string{}
	env, _ := dig(w, "spec", "template", "spec", "containers", 0, "env").([]any)
	for _, e := range env {
		name, _ := dig(e, "name").(string)
		if !strings.HasPrefix(name, config.EnvPrefix) {
			continue
		}
		if v, ok := dig(e, "value").(string); ok {
			out[name] = v
		}
		if dig(e, "valueFrom", "fieldRef", "fieldPath") == "metadata.labels['apps.kubernetes.io/pod-index']" {
			replicas, _ := dig(w, "spec", "replicas").(int)
			out[name] = strconv.Itoa(replicas - 1)
		}
	}
	return out
}

// dig walks nested maps and lists by key or index.
func dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

// TestRenderedConfigLoadsInKneewatch mounts the rendered ConfigMap as the
// Deployment does and loads it with kneewatch's own config loader, with the
// Deployment's arguments as the settings: a chart that renders fine but
// hands kneewatch a config it rejects would crash-loop.
func TestRenderedConfigLoadsInKneewatch(t *testing.T) {
	profile := filepath.Join(moduleRoot(), "knee", "testdata", "valid.yaml")
	cases := []struct {
		name, values string
		extra        []string
	}{
		{"a profile given as file text with --set-file", "", []string{"--set-file", "profiles.llama=" + profile}},
		{"static targets only, discovery off", "", []string{"--set", "discovery.enabled=false",
			"--set", "config.targets[0].replica=vllm-0", "--set", "config.targets[0].metrics_url=http://vllm-0.llm:8000/metrics"}},
	}
	for _, r := range renders {
		cases = append(cases, struct {
			name, values string
			extra        []string
		}{r.name + " values", r.values, nil})
	}
	for _, r := range cases {
		t.Run(r.name+" give a config kneewatch accepts", func(t *testing.T) {
			objs := manifests(t, helmTemplate(t, r.values, r.extra...))
			cm := find(t, objs, "ConfigMap", "kneewatch")
			deploy := workload(t, objs)
			data, _ := cm["data"].(map[string]any)

			dir := filepath.Join(t.TempDir(), "etc", "kneewatch")
			items, _ := dig(deploy, "spec", "template", "spec", "volumes", 0, "configMap", "items").([]any)
			if len(items) != len(data) {
				t.Fatalf("the Deployment mounts %d of the ConfigMap's %d keys", len(items), len(data))
			}
			for _, it := range items {
				key, _ := dig(it, "key").(string)
				path, _ := dig(it, "path").(string)
				text, ok := data[key].(string)
				if !ok {
					t.Fatalf("the Deployment mounts key %q, which the ConfigMap lacks", key)
				}
				if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, path)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, path), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}

			// The web config Secret and its TLS certificate, at the
			// mounted paths moved under the same temporary root.
			for _, o := range objs {
				if o["kind"] != "Secret" || !strings.HasSuffix(dig(o, "metadata", "name").(string), "-web-config") {
					continue
				}
				text := strings.ReplaceAll(dig(o, "stringData", "web-config.yml").(string), "/etc/kneewatch", dir)
				if err := os.MkdirAll(dir+"-web", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir+"-web", "web-config.yml"), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.MkdirAll(dir+"-tls", 0o755); err != nil {
					t.Fatal(err)
				}
				if _, _, _, err := writeServingCert(dir + "-tls"); err != nil {
					t.Fatal(err)
				}
			}
			args, _ := dig(deploy, "spec", "template", "spec", "containers", 0, "args").([]any)
			if len(args) == 0 || args[0] != "serve" {
				t.Fatalf("container args %v do not start with serve", args)
			}
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			config.RegisterFlags(fs)
			var flags []string
			for _, a := range args[1:] {
				s := a.(string)
				flags = append(flags, strings.Replace(s, "/etc/kneewatch", dir, 1))
			}
			if err := fs.Parse(flags); err != nil {
				t.Fatalf("kneewatch serve rejects the chart's arguments: %v", err)
			}
			settings, err := config.LoadSettingsFrom(context.Background(), envconfig.MapLookuper(podEnv(deploy)), config.SetFlags(fs))
			if err != nil {
				t.Fatalf("settings from the chart's arguments: %v", err)
			}
			cfg, err := config.Load(settings.ConfigFile)
			if err != nil {
				t.Fatalf("kneewatch rejects the chart's config: %v", err)
			}
			if err := cfg.CheckSettings(settings); err != nil {
				t.Fatalf("kneewatch rejects the chart's config with its settings: %v", err)
			}
			discovering := dig(deploy, "spec", "template", "spec", "automountServiceAccountToken") == true
			if (cfg.Kubernetes != nil) != discovering {
				t.Errorf("config has a kubernetes section: %v, but the pod gets an API token: %v", cfg.Kubernetes != nil, discovering)
			}
			profiles, err := watch.LoadProfiles(cfg)
			if err != nil {
				t.Fatalf("the chart's profiles do not load: %v", err)
			}
			if want := len(data) - 1; len(profiles) != want {
				t.Errorf("kneewatch loaded %d profiles, the chart ships %d", len(profiles), want)
			}
		})
	}
}
