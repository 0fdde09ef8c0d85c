{{/*
kneewatch.alerts.check fails the render, with kneewatch's own messages (each
naming its key), on the config.alerts values kneewatch would reject: its
config validation (config/alerts.go) and the rules' (rules/validate.go,
rules/config.go). values.schema.json checks their types, names and
duration syntax; this checks their ranges and the checks between them.
Every config/testdata/invalid-alerts-*.yml is rejected here too
(tests/alerts_values_test.go). Rendered with the ConfigMap, so a bad value
fails the install instead of a kneewatch pod that crash-loops on it.
*/}}
{{- define "kneewatch.alerts.check" -}}
{{- $p := include "kneewatch.rules.params" . | fromJson }}
{{- $a := .Values.config.alerts | default dict }}
{{- $e := list }}
{{- $low := $p.headroom_low_below.value }}
{{- $lowOK := and (gt $low 0.0) (lt $low 1.0) }}
{{- if not $lowOK }}
{{- $e = append $e (printf "config.alerts.headroom_low.below: %v is outside (0, 1)" $low) }}
{{- end }}
{{- $below := $p.headroom_exhausted_below.value }}
{{- $belowOK := and (ge $below 0.0) (lt $below 1.0) }}
{{- if not $belowOK }}
{{- $e = append $e (printf "config.alerts.headroom_exhausted.below: %v is outside [0, 1)" $below) }}
{{- else if and $lowOK (ge $below $low) }}
{{- $e = append $e (printf "config.alerts.headroom_exhausted.below: %v must be under headroom_low.below (%v): the page is the more urgent alert" $below $low) }}
{{- end }}
{{- $recovered := $p.headroom_exhausted_recovered_above.value }}
{{- if and (ne $recovered 0.0) (not (and (gt $recovered $below) (le $recovered 1.0))) }}
{{- $e = append $e (printf "config.alerts.headroom_exhausted.recovered_above: %v must be above headroom_exhausted.below (%v) and at most 1, or 0 (off)" $recovered $below) }}
{{- end }}
{{- $sustain := int64 $p.headroom_exhausted_sustain_requests.value }}
{{- if lt $sustain (int64 0) }}
{{- $e = append $e (printf "config.alerts.headroom_exhausted.sustain_requests: %d must not be negative (0 reads the exported headroom as it is)" $sustain) }}
{{- end }}
{{- $quick := int64 $p.headroom_exhausted_quick_requests.value }}
{{- if lt $quick (int64 0) }}
{{- $e = append $e (printf "config.alerts.headroom_exhausted.quick_requests: %d must not be negative (0 turns the quick arm off)" $quick) }}
{{- else if and (gt $sustain (int64 0)) (ge $quick $sustain) }}
{{- $e = append $e (printf "config.alerts.headroom_exhausted.quick_requests: %d must be below headroom_exhausted.sustain_requests (%d), or 0 (off)" $quick $sustain) }}
{{- end }}
{{- $quickBelow := $p.headroom_exhausted_quick_below.value }}
{{- if and $belowOK (gt $quick (int64 0)) (gt $sustain (int64 0)) (not (lt $quickBelow $below)) }}
{{- $e = append $e (printf "config.alerts.headroom_exhausted.quick_below: %v must be below headroom_exhausted.below (%v): fewer requests need a clearer reading" $quickBelow $below) }}
{{- end }}
{{- $knee := $p.past_knee_below.value }}
{{- if and $belowOK (not (and (le $knee $below) (gt $knee -1.0))) }}
{{- $e = append $e (printf "config.alerts.past_knee.below: %v must be in (-1, headroom_exhausted.below (%v)]: it pages on a replica at or past its knee" $knee $below) }}
{{- end }}
{{- $guard := $p.headroom_exhausted_predict_guard.value }}
{{- if not (and (gt $guard $below) (le $guard 1.0)) }}
{{- $e = append $e (printf "config.alerts.headroom_exhausted.predict_guard: %v must be above headroom_exhausted.below (%v) and at most 1" $guard $below) }}
{{- end }}
{{- /* rules.Options.Validate: the trend's confirmation span is shorter than its 5m lookback (rules.DefaultOptions). */}}
{{- $confirm := $p.headroom_exhausted_predict_confirm }}
{{- if and (not $confirm.zero) (ge $confirm.ms 300000.0) }}
{{- $e = append $e (printf "config.alerts.headroom_exhausted.predict_confirm: %s must be shorter than the page's trend lookback (5m): it confirms the most recent part of the trend" $confirm.dur) }}
{{- end }}
{{- $objective := $p.slo_objective.value }}
{{- if not (and (gt $objective 0.0) (lt $objective 1.0)) }}
{{- $e = append $e (printf "config.alerts.slo_objective: %v is outside (0, 1) (0.99 means 99%% of requests meet the SLO)" $objective) }}
{{- else if lt $objective 0.9305555555555556 }}
{{- /* 1 - 1/14.4: below it the 14.4x fast-burn page could never fire. */}}
{{- $e = append $e (printf "config.alerts.slo_objective: %v leaves an error budget of %.3g; the 14.4× fast-burn page would need an error ratio of %.3g, above 1, so it could never fire (use 0.931 or more)" $objective $p.slo_budget.value (mulf 14.4 $p.slo_budget.value)) }}
{{- end }}
{{- $margin := $p.kv_pressure_margin.value }}
{{- if not (and (ge $margin 0.0) (lt $margin 1.0)) }}
{{- $e = append $e (printf "config.alerts.kv_pressure.margin: %v is outside [0, 1)" $margin) }}
{{- end }}
{{- if not (gt $p.kv_pressure_preemptions_per_second.value 0.0) }}
{{- $e = append $e (printf "config.alerts.kv_pressure.preemptions_per_second: must be above 0, got %v" $p.kv_pressure_preemptions_per_second.value) }}
{{- end }}
{{- if $p.probes_failing_all_failing_for.zero }}
{{- $e = append $e (printf "config.alerts.probes_failing.all_failing_for: must be above 0 (the span with no successful probe that pages), got %s" $p.probes_failing_all_failing_for.dur) }}
{{- end }}
{{- $success := $p.probes_failing_success_warning.value }}
{{- if not (and (gt $success 0.0) (le $success 1.0)) }}
{{- $e = append $e (printf "config.alerts.probes_failing.success_warning: %v is outside (0, 1]" $success) }}
{{- end }}
{{- range $key := list "runbook_base_url" "dashboard_base_url" }}
{{- with get $a $key }}
{{- $u := urlParse . }}
{{- if not (has $u.scheme (list "http" "https")) }}
{{- $e = append $e (printf "config.alerts.%s: %q is not an http:// or https:// URL" $key .) }}
{{- else if not $u.host }}
{{- $e = append $e (printf "config.alerts.%s: %q has no host" $key .) }}
{{- else if $u.userinfo }}
{{- $e = append $e (printf "config.alerts.%s: the URL carries credentials, which would be in every alert" $key) }}
{{- else if $u.fragment }}
{{- $e = append $e (printf "config.alerts.%s: %q has a #fragment, which HTTP requests never send" $key .) }}
{{- end }}
{{- end }}
{{- end }}
{{- $reserved := splitList " " (include "kneewatch.rules.reservedLabels" .) }}
{{- range $name := keys ($a.labels | default dict) | sortAlpha }}
{{- if not (regexMatch "^[a-zA-Z_][a-zA-Z0-9_]*$" $name) }}
{{- $e = append $e (printf "config.alerts.labels: %q is not a valid label name (want [a-zA-Z_][a-zA-Z0-9_]*)" $name) }}
{{- else if hasPrefix "__" $name }}
{{- $e = append $e (printf "config.alerts.labels: %q starts with __, which Prometheus reserves" $name) }}
{{- else if has $name $reserved }}
{{- $e = append $e (printf "config.alerts.labels: %q is set by the generated rules or by Prometheus (reserved: %s)" $name (join ", " $reserved)) }}
{{- end }}
{{- end }}
{{- $alerts := splitList " " (include "kneewatch.rules.alertNames" .) }}
{{- range $a.disabled }}
{{- if not (has . $alerts) }}
{{- $e = append $e (printf "config.alerts.disabled: %q is not a generated alert (want one of %s)" . (join ", " $alerts)) }}
{{- end }}
{{- end }}
{{- $target := $p.target_headroom.value }}
{{- if not (and (ge $target 0.0) (lt $target 1.0)) }}
{{- $e = append $e (printf "config.global.target_headroom: %v is outside [0, 1): it is the headroom each replica should keep when sizing the fleet" $target) }}
{{- end }}
{{- if $p.evaluation_window.zero }}
{{- $e = append $e "evaluationWindow: must be above 0 (the window of rates and quantiles, and of the ruler group's means)" }}
{{- end }}
{{- with $e }}
{{- fail (join "\n" .) }}
{{- end }}
{{- end }}
