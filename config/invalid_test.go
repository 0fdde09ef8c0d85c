package config

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadRejectsInvalidConfigs holds one fixture per decoding or validation
// rule, with the exact error a user sees.
func TestLoadRejectsInvalidConfigs(t *testing.T) {
	tests := []struct {
		name    string
		fixture string
		want    string
	}{
		{"rejects a dashboard base URL that is not HTTP", "invalid-alerts-dashboard-url.yml",
			"testdata/invalid-alerts-dashboard-url.yml: line 3: alerts.dashboard_base_url: \"grafana.example.com:3000\" is not an http:// or https:// URL"},
		{"rejects a negative page threshold", "invalid-alerts-headroom-exhausted-negative.yml",
			"testdata/invalid-alerts-headroom-exhausted-negative.yml: line 4: alerts.headroom_exhausted.below: -0.1 is outside [0, 1)"},
		{"rejects a page threshold above the warning", "invalid-alerts-headroom-exhausted-order.yml",
			"testdata/invalid-alerts-headroom-exhausted-order.yml: line 4: alerts.headroom_exhausted.below: 0.25 must be under headroom_low.below (0.2): the page is the more urgent alert"},
		{"rejects a warning threshold of 0", "invalid-alerts-headroom-low.yml",
			"testdata/invalid-alerts-headroom-low.yml: line 4: alerts.headroom_low.below: 0 is outside (0, 1)"},
		{"rejects a KV margin of 1", "invalid-alerts-kv-margin.yml",
			"testdata/invalid-alerts-kv-margin.yml: line 4: alerts.kv_pressure.margin: 1 is outside [0, 1)"},
		{"rejects a zero preemption threshold", "invalid-alerts-kv-preemptions.yml",
			"testdata/invalid-alerts-kv-preemptions.yml: line 4: alerts.kv_pressure.preemptions_per_second: must be above 0, got 0"},
		{"rejects an extra rule label the rules set", "invalid-alerts-labels-reserved.yml",
			"testdata/invalid-alerts-labels-reserved.yml: line 3: alerts.labels: \"severity\" is set by the generated rules or by Prometheus (reserved: alertname, severity, replica, model, profile, slo, source, signal, job, instance)"},
		{"rejects an extra rule label Prometheus sets on scraped series", "invalid-alerts-labels-reserved-target.yml",
			"testdata/invalid-alerts-labels-reserved-target.yml: line 3: alerts.labels: \"instance\" is set by the generated rules or by Prometheus (reserved: alertname, severity, replica, model, profile, slo, source, signal, job, instance)"},
		{"rejects a predict guard under the page threshold", "invalid-alerts-predict-guard.yml",
			"testdata/invalid-alerts-predict-guard.yml: line 5: alerts.headroom_exhausted.predict_guard: 0.01 must be above headroom_exhausted.below (0.05) and at most 1"},
		{"rejects an overload page before the knee", "invalid-alerts-past-knee.yml",
			"testdata/invalid-alerts-past-knee.yml: line 4: alerts.past_knee.below: 0.3 must be in (-1, headroom_exhausted.below (0)]: it pages on a replica at or past its knee"},
		{"rejects a recovery guard not above the page threshold", "invalid-alerts-recovered-above.yml",
			"testdata/invalid-alerts-recovered-above.yml: line 5: alerts.headroom_exhausted.recovered_above: 0.1 must be above headroom_exhausted.below (0.1) and at most 1, or 0 (off)"},
		{"rejects a negative request count", "invalid-alerts-sustain-requests.yml",
			"testdata/invalid-alerts-sustain-requests.yml: line 4: alerts.headroom_exhausted.sustain_requests: -5 must not be negative (0 reads the exported headroom as it is)"},
		{"rejects a quick arm over as many requests as the sustained one", "invalid-alerts-quick-requests.yml",
			"testdata/invalid-alerts-quick-requests.yml: line 5: alerts.headroom_exhausted.quick_requests: 100 must be below headroom_exhausted.sustain_requests (100), or 0 (off)"},
		{"rejects a zero span of failing probes", "invalid-alerts-probes-all-failing-for.yml",
			"testdata/invalid-alerts-probes-all-failing-for.yml: line 4: alerts.probes_failing.all_failing_for: must be above 0 (the span with no successful probe that pages), got 0s"},
		{"rejects a zero probe success threshold", "invalid-alerts-probe-success.yml",
			"testdata/invalid-alerts-probe-success.yml: line 4: alerts.probes_failing.success_warning: 0 is outside (0, 1]"},
		{"rejects a runbook base URL without scheme", "invalid-alerts-runbook-url.yml",
			"testdata/invalid-alerts-runbook-url.yml: line 3: alerts.runbook_base_url: \"docs/runbooks\" is not an http:// or https:// URL"},
		{"rejects an objective too low for the 14.4x page", "invalid-alerts-slo-objective-burn.yml",
			"testdata/invalid-alerts-slo-objective-burn.yml: line 3: alerts.slo_objective: 0.9 leaves an error budget of 0.1; the 14.4× fast-burn page would need an error ratio of 1.44, above 1, so it could never fire (use 0.931 or more)"},
		{"rejects an objective of 100%", "invalid-alerts-slo-objective.yml",
			"testdata/invalid-alerts-slo-objective.yml: line 3: alerts.slo_objective: 1 is outside (0, 1) (0.99 means 99% of requests meet the SLO)"},
		{"rejects a size with an unknown unit", "invalid-bytesize.yml",
			"testdata/invalid-bytesize.yml: line 3: global.body_size_limit: \"16 apples\" is not a size (want a number and a unit, e.g. 512KiB, 16MiB, 1GiB)"},
		{"rejects both dcgm selectors", "invalid-dcgm-both-selectors.yml",
			"testdata/invalid-dcgm-both-selectors.yml: line 5: targets[0].dcgm: set gpu_uuids or pod and namespace, not both"},
		{"rejects an empty GPU UUID", "invalid-dcgm-empty-uuid.yml",
			"testdata/invalid-dcgm-empty-uuid.yml: line 7: targets[0].dcgm.gpu_uuids[0]: empty GPU UUID"},
		{"rejects a dcgm pod without namespace", "invalid-dcgm-pod-without-namespace.yml",
			"testdata/invalid-dcgm-pod-without-namespace.yml: line 5: targets[0].dcgm: set both pod and namespace (dcgm-exporter labels GPUs with both), got pod \"vllm-0\" and namespace \"\""},
		{"rejects a dcgm block without GPU selector", "invalid-dcgm-selector.yml",
			"testdata/invalid-dcgm-selector.yml: line 5: targets[0].dcgm: no GPU selector: set gpu_uuids, or pod and namespace, to pick this replica's GPUs from the exporter"},
		{"rejects a dcgm block without url", "invalid-dcgm-url.yml",
			"testdata/invalid-dcgm-url.yml: line 5: targets[0].dcgm.url: missing (the dcgm-exporter endpoint, e.g. http://10.0.0.7:9400/metrics)"},
		{"rejects a mapping where a duration goes", "invalid-duration-mapping.yml",
			"testdata/invalid-duration-mapping.yml: line 4: global.scrape_timeout.seconds: want a duration such as 30s, got a mapping"},
		{"rejects a duration without a known unit", "invalid-duration.yml",
			"testdata/invalid-duration.yml: line 3: global.scrape_timeout: \"5x\" is not a duration (want a number and a unit, e.g. 500ms, 30s, 5m, 1h)"},
		{"rejects a negative body size limit", "invalid-global-body-size-limit.yml",
			"testdata/invalid-global-body-size-limit.yml: line 3: global.body_size_limit: must not be negative (0 means no limit), got -1MiB"},
		{"rejects a profiles_dir file whose name is also listed", "invalid-global-profiles-dir-duplicate.yml",
			"testdata/invalid-global-profiles-dir-duplicate.yml: line 3: global.profiles_dir: testdata/profiles/llama-8b.yaml would be profile \"llama-8b\", which profiles[0] already names"},
		{"rejects a profiles_dir that does not exist", "invalid-global-profiles-dir.yml",
			"testdata/invalid-global-profiles-dir.yml: line 3: global.profiles_dir: open testdata/no-such-dir: no such file or directory"},
		{"rejects a zero scrape timeout", "invalid-global-scrape-timeout.yml",
			"testdata/invalid-global-scrape-timeout.yml: line 3: global.scrape_timeout: must be above 0, got 0s"},
		{"rejects a negative scrape memory limit", "invalid-global-scrape-memory-limit.yml",
			"testdata/invalid-global-scrape-memory-limit.yml: line 3: global.scrape_memory_limit: must not be negative (0 means no limit), got -1MiB"},
		{"rejects a negative series limit", "invalid-global-series-limit.yml",
			"testdata/invalid-global-series-limit.yml: line 3: global.series_limit: must not be negative (0 means no limit), got -5"},
		{"rejects a quantile given as a percentile", "invalid-global-slo-quantile.yml",
			"testdata/invalid-global-slo-quantile.yml: line 4: global.slo.quantile: 99 is outside (0, 1) (0.99 means p99)"},
		{"rejects a zero TPOT threshold", "invalid-global-slo-tpot.yml",
			"testdata/invalid-global-slo-tpot.yml: line 4: global.slo.tpot: must be above 0, got 0s"},
		{"rejects a zero TTFT threshold", "invalid-global-slo-ttft.yml",
			"testdata/invalid-global-slo-ttft.yml: line 4: global.slo.ttft: must be above 0, got 0s"},
		{"rejects an external label kneewatch sets itself", "invalid-global-external-labels-reserved.yml",
			"testdata/invalid-global-external-labels-reserved.yml: line 3: global.external_labels: \"namespace\" is set by kneewatch itself (reserved: replica, model, profile, namespace, pod, engine, source, problem, dimension, slo, slo_quantile, quantile, resource, reason, class, job, instance)"},
		{"rejects an external label without a value", "invalid-global-external-labels-empty.yml",
			"testdata/invalid-global-external-labels-empty.yml: line 3: global.external_labels: \"cluster\" has an empty value, which Prometheus treats as no label"},
		{"rejects a target label that an external label sets", "invalid-target-labels-external.yml",
			"testdata/invalid-target-labels-external.yml: line 8: targets[0].labels: \"cluster\" is also in global.external_labels, which kneewatch puts on every series"},
		{"rejects a namespace with a trailing space", "invalid-target-namespace-spaces.yml",
			"testdata/invalid-target-namespace-spaces.yml: line 4: targets[0].namespace: \"team-a \" has leading or trailing spaces"},
		{"rejects a target headroom of 1", "invalid-global-target-headroom.yml",
			"testdata/invalid-global-target-headroom.yml: line 3: global.target_headroom: 1 is outside [0, 1): it is the headroom each replica should keep when sizing the fleet"},
		{"rejects two bearer token sources", "invalid-http-client-conflict.yml",
			"testdata/invalid-http-client-conflict.yml: line 6: targets[0].http_client.bearer_token: at most one of bearer_token & bearer_token_file must be configured"},
		{"rejects a misspelt http_client key", "invalid-http-client-unknown-field.yml",
			"testdata/invalid-http-client-unknown-field.yml: line 6: targets[0].http_client.bearer_tokn_file: field bearer_tokn_file not found in http_client"},
		{"rejects an annotation key with a space", "invalid-kubernetes-annotation.yml",
			"testdata/invalid-kubernetes-annotation.yml: line 5: kubernetes.annotations.profile: \"kneewatch profile\" is not a Kubernetes label or annotation key: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"},
		{"rejects a dcgm namespace with an underscore", "invalid-kubernetes-dcgm-namespace.yml",
			"testdata/invalid-kubernetes-dcgm-namespace.yml: line 5: kubernetes.dcgm.namespace: \"gpu_operator\" is not a namespace name: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"},
		{"rejects a dcgm port of 0", "invalid-kubernetes-dcgm-port.yml",
			"testdata/invalid-kubernetes-dcgm-port.yml: line 5: kubernetes.dcgm.port: 0 is not a port (want 1-65535)"},
		{"rejects a label selector that does not parse", "invalid-kubernetes-label-selector-syntax.yml",
			"testdata/invalid-kubernetes-label-selector-syntax.yml: line 3: kubernetes.label_selector: \"app in (vllm\" is not a label selector: unable to parse requirement: found '', expected: ',' or ')'"},
		{"rejects discovery without a label selector", "invalid-kubernetes-label-selector.yml",
			"testdata/invalid-kubernetes-label-selector.yml: line 2: kubernetes.label_selector: missing: without a selector every pod would be taken for a serving replica (e.g. app.kubernetes.io/component=llm-server)"},
		{"rejects a metrics path without leading slash", "invalid-kubernetes-metrics-path.yml",
			"testdata/invalid-kubernetes-metrics-path.yml: line 4: kubernetes.metrics_path: \"metrics\" must start with /"},
		{"rejects a metrics port out of range", "invalid-kubernetes-metrics-port.yml",
			"testdata/invalid-kubernetes-metrics-port.yml: line 4: kubernetes.metrics_port: 70000 is not a port (want 1-65535)"},
		{"rejects a namespace with capitals", "invalid-kubernetes-namespace.yml",
			"testdata/invalid-kubernetes-namespace.yml: line 4: kubernetes.namespaces[0]: \"LLM\" is not a namespace name: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"},
		{"rejects a discovery scheme that is not HTTP", "invalid-kubernetes-scheme.yml",
			"testdata/invalid-kubernetes-scheme.yml: line 4: kubernetes.scheme: \"grpc\" is not supported (want http or https)"},
		{"rejects neither targets nor kubernetes", "invalid-no-targets.yml",
			"testdata/invalid-no-targets.yml: targets: nothing to watch: list targets, or configure kubernetes discovery"},
		{"rejects both API key sources", "invalid-probes-api-key-both.yml",
			"testdata/invalid-probes-api-key-both.yml: line 2: probes: set api_key_file or api_key_env, not both"},
		{"rejects a key where an env var name goes", "invalid-probes-api-key-env.yml",
			"testdata/invalid-probes-api-key-env.yml: line 3: probes.api_key_env: \"sk-abc-123\" is not an environment variable name (give the variable's name, not the key)"},
		{"rejects an API key written in the file", "invalid-probes-api-key-inline.yml",
			"testdata/invalid-probes-api-key-inline.yml: line 3: probes.api_key: unknown key \"api_key\"; the keys here are api, api_key_env, api_key_file, enabled, ignore_eos, interval, load_ratio_cap, max_tokens, prompt_tokens, skip_past_knee, skip_queue_growing, timeout"},
		{"rejects an unknown probe API", "invalid-probes-api.yml",
			"testdata/invalid-probes-api.yml: line 3: probes.api: unknown API \"responses\" (want completions or chat)"},
		{"rejects a zero probe interval", "invalid-probes-interval.yml",
			"testdata/invalid-probes-interval.yml: line 3: probes.interval: must be above 0, got 0s"},
		{"rejects a zero load ratio cap", "invalid-probes-load-ratio-cap.yml",
			"testdata/invalid-probes-load-ratio-cap.yml: line 3: probes.load_ratio_cap: 0 is outside (0, 1) (0.001 caps probe tokens at 0.1% of knee throughput)"},
		{"rejects one output token", "invalid-probes-max-tokens.yml",
			"testdata/invalid-probes-max-tokens.yml: line 3: probes.max_tokens: must be at least 2 (TPOT is measured between output tokens), got 1"},
		{"rejects no prompt tokens", "invalid-probes-prompt-tokens.yml",
			"testdata/invalid-probes-prompt-tokens.yml: line 3: probes.prompt_tokens: must be at least 1, got 0"},
		{"rejects a probe timeout as long as the interval", "invalid-probes-timeout-interval.yml",
			"testdata/invalid-probes-timeout-interval.yml: line 4: probes.timeout: 10s must be shorter than probes.interval (10s), so at most one probe is in flight per replica"},
		{"rejects a zero probe timeout", "invalid-probes-timeout.yml",
			"testdata/invalid-probes-timeout.yml: line 3: probes.timeout: must be above 0, got 0s"},
		{"rejects a profile file that does not exist", "invalid-profile-file-missing.yml",
			"testdata/invalid-profile-file-missing.yml: line 4: profiles[0].file: stat testdata/profiles/no-such-profile.yaml: no such file or directory"},
		{"rejects a profile without a file", "invalid-profile-file.yml",
			"testdata/invalid-profile-file.yml: line 3: profiles[0].file: missing (the knee profile's YAML file)"},
		{"rejects two profiles with one name", "invalid-profile-name-duplicate.yml",
			"testdata/invalid-profile-name-duplicate.yml: line 5: profiles[1].name: \"llama-8b\" is already used by profiles[0]"},
		{"rejects a profile without a name", "invalid-profile-name.yml",
			"testdata/invalid-profile-name.yml: line 3: profiles[0].name: missing (targets refer to the profile by this name)"},
		{"reports every one of three mistakes, one a line", "invalid-several.yml",
			"testdata/invalid-several.yml: line 4: targets[0].engine: unknown engine \"vlm\" (want vllm, sglang, tgi, trtllm or empty for auto-detect)\ntestdata/invalid-several.yml: line 6: targets[1].replica: \"vllm-0\" is already used by targets[0]\ntestdata/invalid-several.yml: line 9: probes.max_tokens: must be at least 2 (TPOT is measured between output tokens), got 1"},
		{"rejects broken YAML", "invalid-syntax.yml",
			"testdata/invalid-syntax.yml: line 2: did not find expected '-' indicator"},
		{"rejects a misspelt engine", "invalid-target-engine.yml",
			"testdata/invalid-target-engine.yml: line 5: targets[0].engine: unknown engine \"vlm\" (want vllm, sglang, tgi, trtllm or empty for auto-detect)"},
		{"rejects an extra label starting with __", "invalid-target-labels-dunder.yml",
			"testdata/invalid-target-labels-dunder.yml: line 5: targets[0].labels: \"__meta_zone\" starts with __, which Prometheus reserves"},
		{"rejects an extra label with a dash", "invalid-target-labels-name.yml",
			"testdata/invalid-target-labels-name.yml: line 5: targets[0].labels: \"team-name\" is not a valid label name (want [a-zA-Z_][a-zA-Z0-9_]*)"},
		{"rejects an extra label kneewatch sets itself", "invalid-target-labels-reserved.yml",
			"testdata/invalid-target-labels-reserved.yml: line 5: targets[0].labels: \"model\" is set by kneewatch itself (reserved: replica, model, profile, namespace, pod, engine, source, problem, dimension, slo, slo_quantile, quantile, resource, reason, class, job, instance)"},
		{"rejects a password in metrics_url", "invalid-target-metrics-url-credentials.yml",
			"testdata/invalid-target-metrics-url-credentials.yml: line 4: targets[0].metrics_url: http://admin:xxxxx@127.0.0.1:8000/metrics carries credentials; put them in http_client (basic_auth with password_file, or authorization) instead"},
		{"rejects a fragment in metrics_url", "invalid-target-metrics-url-fragment.yml",
			"testdata/invalid-target-metrics-url-fragment.yml: line 4: targets[0].metrics_url: \"http://127.0.0.1:8000/metrics#engine\" has a #fragment, which HTTP requests never send"},
		{"rejects a metrics_url without host", "invalid-target-metrics-url-host.yml",
			"testdata/invalid-target-metrics-url-host.yml: line 4: targets[0].metrics_url: \"http:///metrics\" has no host"},
		{"rejects a metrics_url without scheme", "invalid-target-metrics-url-no-scheme.yml",
			"testdata/invalid-target-metrics-url-no-scheme.yml: line 4: targets[0].metrics_url: not a URL: it needs a scheme, as in http://host:port/path"},
		{"rejects a metrics_url that is not HTTP", "invalid-target-metrics-url-scheme.yml",
			"testdata/invalid-target-metrics-url-scheme.yml: line 4: targets[0].metrics_url: \"ftp://127.0.0.1/metrics\" is not an http:// or https:// URL"},
		{"rejects a target without metrics_url", "invalid-target-metrics-url.yml",
			"testdata/invalid-target-metrics-url.yml: line 3: targets[0].metrics_url: missing (the engine's Prometheus endpoint, e.g. http://10.0.0.7:8000/metrics)"},
		{"rejects an openai_url that is not HTTP", "invalid-target-openai-url.yml",
			"testdata/invalid-target-openai-url.yml: line 5: targets[0].openai_url: \"grpc://127.0.0.1:8000/v1\" is not an http:// or https:// URL"},
		{"rejects a target naming a profile when none are configured", "invalid-target-profile-none-configured.yml",
			"testdata/invalid-target-profile-none-configured.yml: line 5: targets[0].profile: unknown profile \"llama-8b\": no profiles are configured (list them under profiles or set global.profiles_dir)"},
		{"rejects a target naming an unlisted profile", "invalid-target-profile.yml",
			"testdata/invalid-target-profile.yml: line 10: targets[0].profile: unknown profile \"llama-70b\" (known: llama-8b, mistral-7b)"},
		{"rejects two targets with one replica name", "invalid-target-replica-duplicate.yml",
			"testdata/invalid-target-replica-duplicate.yml: line 5: targets[1].replica: \"vllm-0\" is already used by targets[0]"},
		{"rejects a replica name with a trailing space", "invalid-target-replica-spaces.yml",
			"testdata/invalid-target-replica-spaces.yml: line 3: targets[0].replica: \"vllm-0 \" has leading or trailing spaces"},
		{"rejects a target without a replica name", "invalid-target-replica.yml",
			"testdata/invalid-target-replica.yml: line 3: targets[0].replica: missing (every target needs a unique replica name)"},
		{"rejects a second YAML document", "invalid-two-documents.yml",
			"testdata/invalid-two-documents.yml: line 5: a second YAML document, want exactly one kneewatch config"},
		{"rejects a word where a number goes", "invalid-type.yml",
			"testdata/invalid-type.yml: line 3: global.series_limit: cannot unmarshal !!str `lots` into int"},
		{"rejects a misspelt target key", "invalid-unknown-field.yml",
			"testdata/invalid-unknown-field.yml: line 5: targets[0].replcia: unknown key \"replcia\" (did you mean \"replica\"?); the keys here are dcgm, engine, http_client, labels, metrics_url, model, namespace, openai_url, pod, profile, replica"},
		{"rejects a misspelt section", "invalid-unknown-top-level-key.yml",
			"testdata/invalid-unknown-top-level-key.yml: line 2: target: unknown key \"target\" (did you mean \"targets\"?); the keys here are alerts, global, kubernetes, probes, profiles, targets"},
		{"rejects a URL that does not parse", "invalid-url-syntax.yml",
			"testdata/invalid-url-syntax.yml: line 4: targets[0].metrics_url: not a URL: missing ']' in host"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(filepath.Join("testdata", tt.fixture))
			if err == nil {
				t.Fatalf("Load(%s) succeeded, want error:\n%s", tt.fixture, tt.want)
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("Load(%s) error:\n got: %s\nwant: %s", tt.fixture, got, tt.want)
			}
		})
	}
}

// TestEveryInvalidFixtureIsTested keeps the table and testdata in step: a
// fixture nobody asserts on proves nothing.
func TestEveryInvalidFixtureIsTested(t *testing.T) {
	src, err := filepath.Glob("testdata/invalid-*.yml")
	if err != nil {
		t.Fatal(err)
	}
	table, err := readFile("invalid_test.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range src {
		if !strings.Contains(table, `"`+filepath.Base(f)+`"`) {
			t.Errorf("%s has no case in TestLoadRejectsInvalidConfigs", f)
		}
	}
}

// TestErrorsNeverEchoSecrets checks that rejecting a config does not print
// the secret that made it invalid.
func TestErrorsNeverEchoSecrets(t *testing.T) {
	tests := []struct {
		name    string
		fixture string
		secret  string
	}{
		{"an inline API key is refused without echoing it", "invalid-probes-api-key-inline.yml", "sk-do-not-put-keys-here"},
		{"a password in a metrics URL is masked in the error", "invalid-target-metrics-url-credentials.yml", "hunter2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(filepath.Join("testdata", tt.fixture))
			if err == nil {
				t.Fatalf("Load(%s) succeeded, want an error", tt.fixture)
			}
			if strings.Contains(err.Error(), tt.secret) {
				t.Errorf("error reveals %q: %v", tt.secret, err)
			}
		})
	}
}
