{{- /*
The parameters' values, looked up in the chart's values with the generator's
defaults and printed as the generator prints them (rules/helm_params.go):
numbers as the PromQL printer writes them (strconv 'f', -1), percentages to
four significant digits of the decimal times 100 (sprig's mulf is decimal, as
rules.pct is), numbers in text to six, durations as Prometheus writes them.
Each helper returns a JSON object; zero is true for a value of 0.
*/ -}}

{{- /* kneewatch.rules.lookup: (dict "values" … "path" "a.b.c" "default" …) → the value at path, or default where a key is missing or null. Returned as JSON. */ -}}
{{- define "kneewatch.rules.lookup" -}}
{{- $node := .values }}
{{- $found := true }}
{{- range splitList "." .path }}
{{- if and $found (kindIs "map" $node) (hasKey $node .) (not (kindIs "invalid" (get $node .))) }}
{{- $node = get $node . }}
{{- else }}
{{- $found = false }}
{{- end }}
{{- end }}
{{- if $found }}{{ toJson (dict "v" $node) }}{{ else }}{{ toJson (dict "v" .default) }}{{ end }}
{{- end }}

{{- /* kneewatch.rules.ratio: (dict "values" … "path" … "default" …) or (dict "value" x) → {value, num, pct, text, zero}. */ -}}
{{- define "kneewatch.rules.ratio" -}}
{{- $x := .value }}
{{- if not (hasKey . "value") }}
{{- $x = (include "kneewatch.rules.lookup" . | fromJson).v }}
{{- end }}
{{- if not (or (kindIs "float64" $x) (kindIs "int64" $x) (kindIs "int" $x)) }}
{{- fail (printf "%s: %v is not a number" (printf "%s" .path) $x) }}
{{- end }}
{{- $x = float64 $x }}
{{- dict "value" $x "num" (include "kneewatch.rules.plainNumber" $x) "pct" (printf "%.4g%%" (mulf $x 100)) "text" (printf "%.6g" $x) "zero" (eq $x 0.0) | toJson }}
{{- end }}

{{- /* kneewatch.rules.count: (dict "values" … "path" … "default" …) → {value, int, zero}. */ -}}
{{- define "kneewatch.rules.count" -}}
{{- $x := (include "kneewatch.rules.lookup" . | fromJson).v }}
{{- if not (or (kindIs "float64" $x) (kindIs "int64" $x) (kindIs "int" $x)) }}
{{- fail (printf "%s: %v is not a whole number" .path $x) }}
{{- end }}
{{- if ne (float64 $x) (float64 (int64 $x)) }}
{{- fail (printf "%s: %v is not a whole number" .path $x) }}
{{- end }}
{{- $n := int64 $x }}
{{- dict "value" $n "int" (printf "%d" $n) "zero" (eq $n (int64 0)) | toJson }}
{{- end }}

{{- /* kneewatch.rules.duration: (dict "values" … "path" … "default" …) → {dur, ms, zero}. A duration is read as Prometheus reads one (model.ParseDuration): units y, w, d, h, m, s, ms in that order, each at most once, or 0. */ -}}
{{- define "kneewatch.rules.duration" -}}
{{- $x := (include "kneewatch.rules.lookup" . | fromJson).v }}
{{- $ms := 0 }}
{{- $max := 9223372036854 }}
{{- if kindIs "string" $x }}
{{- if or (eq $x "") (not (regexMatch "^(0|([0-9]+y)?([0-9]+w)?([0-9]+d)?([0-9]+h)?([0-9]+m)?([0-9]+s)?([0-9]+ms)?)$" $x)) }}
{{- fail (printf "%s: %q is not a duration (want a number and a unit, e.g. 500ms, 30s, 5m, 1h)" .path $x) }}
{{- end }}
{{- $units := dict "y" 31536000000 "w" 604800000 "d" 86400000 "h" 3600000 "m" 60000 "s" 1000 "ms" 1 }}
{{- range regexFindAll "[0-9]+(ms|[ywdhms])" $x -1 }}
{{- $digits := regexFind "^[0-9]+" . }}
{{- $mult := get $units (trimPrefix $digits .) }}
{{- if or (gt (len $digits) 15) (gt (atoi $digits) (div $max $mult)) }}
{{- fail (printf "%s: %q is out of range" $.path $x) }}
{{- end }}
{{- $ms = add $ms (mul (atoi $digits) $mult) }}
{{- end }}
{{- if gt $ms $max }}
{{- fail (printf "%s: %q is out of range" .path $x) }}
{{- end }}
{{- else if not (and (or (kindIs "float64" $x) (kindIs "int64" $x) (kindIs "int" $x)) (eq (float64 $x) 0.0)) }}
{{- fail (printf "%s: %v is not a duration (want a number and a unit, e.g. 500ms, 30s, 5m, 1h)" .path $x) }}
{{- end }}
{{- dict "dur" (include "kneewatch.rules.formatDuration" (int64 $ms)) "ms" (int64 $ms) "zero" (eq (int64 $ms) (int64 0)) | toJson }}
{{- end }}

{{- /* kneewatch.rules.formatDuration: milliseconds → the duration as Prometheus writes it (model.Duration.String). */ -}}
{{- define "kneewatch.rules.formatDuration" -}}
{{- $ms := int64 . }}
{{- if eq $ms (int64 0) }}0s{{ else }}
{{- $out := "" }}
{{- range list (list "y" 31536000000 true) (list "w" 604800000 true) (list "d" 86400000 false) (list "h" 3600000 false) (list "m" 60000 false) (list "s" 1000 false) (list "ms" 1 false) }}
{{- $mult := index . 1 }}
{{- if not (and (index . 2) (ne (mod $ms $mult) (int64 0))) }}
{{- $v := div $ms $mult }}
{{- if gt $v (int64 0) }}
{{- $out = printf "%s%d%s" $out $v (index . 0) }}
{{- $ms = sub $ms (mul $v $mult) }}
{{- end }}
{{- end }}
{{- end }}
{{- $out }}
{{- end }}
{{- end }}

{{- /* kneewatch.rules.plainNumber: a number as the PromQL printer writes it (strconv.FormatFloat(v, 'f', -1, 64)). toJson writes that from 1e-6 up to 1e21; beyond, its exponent form is written out. */ -}}
{{- define "kneewatch.rules.plainNumber" -}}
{{- $s := toJson . }}
{{- if not (contains "e" $s) }}{{ $s }}{{ else }}
{{- $sign := regexReplaceAll "^(-?).*$" $s "${1}" }}
{{- $int := regexReplaceAll "^-?([0-9])(\\.[0-9]+)?e.*$" $s "${1}" }}
{{- $frac := regexReplaceAll "^-?[0-9](\\.([0-9]+))?e.*$" $s "${2}" }}
{{- $exp := atoi (regexReplaceAll "^.*e[-+]([0-9]+)$" $s "${1}") }}
{{- if contains "e-" $s }}
{{- printf "%s0.%s%s%s" $sign (repeat (sub $exp 1 | int) "0") $int $frac }}
{{- else }}
{{- printf "%s%s%s%s" $sign $int $frac (repeat (sub $exp (len $frac) | int) "0") }}
{{- end }}
{{- end }}
{{- end }}
