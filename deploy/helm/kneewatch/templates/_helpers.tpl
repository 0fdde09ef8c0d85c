{{/* Chart name, truncated to a DNS label. */}}
{{- define "kneewatch.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name prefix of every object: the release name, plus the chart name when the release name does not hold it. */}}
{{- define "kneewatch.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Labels on every object. */}}
{{- define "kneewatch.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "kneewatch.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Labels selecting the kneewatch pod; never change them on upgrade (Deployment selectors are immutable). */}}
{{- define "kneewatch.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kneewatch.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "kneewatch.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "kneewatch.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The kneewatch config file: .Values.config with the kubernetes section built
from .Values.discovery, global.profiles_dir pointing at the mounted profiles,
and probes.api_key_env naming the variable the existing Secret fills.
*/}}
{{- define "kneewatch.config" -}}
{{- $cfg := deepCopy (.Values.config | default dict) }}
{{- if .Values.profiles }}
{{- $global := get $cfg "global" | default dict }}
{{- $_ := set $global "profiles_dir" "profiles" }}
{{- $_ := set $cfg "global" $global }}
{{- end }}
{{- if .Values.probes.apiKeySecret.name }}
{{- $probes := get $cfg "probes" | default dict }}
{{- $_ := set $probes "api_key_env" "KNEEWATCH_PROBE_API_KEY" }}
{{- $_ := set $cfg "probes" $probes }}
{{- end }}
{{- with .Values.discovery }}
{{- if .enabled }}
{{- $k := dict "label_selector" .labelSelector "scheme" .scheme "metrics_port" .metricsPort "metrics_path" .metricsPath "openai_path" .openaiPath "profile_label" .profileLabel "engine_label" .engineLabel }}
{{- if .namespaces }}{{ $_ := set $k "namespaces" .namespaces }}{{ end }}
{{- if .modelLabel }}{{ $_ := set $k "model_label" .modelLabel }}{{ end }}
{{- if .dcgm.enabled }}
{{- $_ := set $k "dcgm" (dict "namespace" .dcgm.namespace "label_selector" .dcgm.labelSelector "port" .dcgm.port "path" .dcgm.path) }}
{{- end }}
{{- $_ := set $cfg "kubernetes" $k }}
{{- end }}
{{- end }}
{{- toYaml $cfg }}
{{- end }}

{{/* Namespaces whose pods discovery reads, when it does not watch all of them. */}}
{{- define "kneewatch.watchedNamespaces" -}}
{{- $ns := list }}
{{- range .Values.discovery.namespaces }}{{ $ns = append $ns . }}{{ end }}
{{- if .Values.discovery.dcgm.enabled }}{{ $ns = append $ns .Values.discovery.dcgm.namespace }}{{ end }}
{{- toJson (uniq $ns) }}
{{- end }}

{{/*
Non-empty when the prometheus-operator objects (ServiceMonitor,
PrometheusRule) should be rendered: the API server serves
monitoring.coreos.com/v1, or the check is turned off. Without the check a
cluster lacking the operator's CRDs fails the whole install on them.
*/}}
{{- define "kneewatch.monitoringAPI" -}}
{{- if or (not .Values.monitoringCapabilityCheck) (.Capabilities.APIVersions.Has "monitoring.coreos.com/v1") }}true{{ end }}
{{- end }}

{{/*
Extra labels of a prometheus-operator object: (list $ .Values.x.labels).
releaseLabel becomes release: <it>, the label kube-prometheus-stack's
Prometheus selects ServiceMonitors and rules by; an explicit labels.release wins.
*/}}
{{- define "kneewatch.monitoringLabels" -}}
{{- $root := index . 0 }}
{{- $labels := deepCopy (index . 1 | default dict) }}
{{- with $root.Values.releaseLabel }}
{{- if not (hasKey $labels "release") }}{{ $_ := set $labels "release" . }}{{ end }}
{{- end }}
{{- with $labels }}
{{- toYaml . }}
{{- end }}
{{- end }}

{{/* Non-empty when kneewatch's listener serves TLS (web.config has tls_server_config). */}}
{{- define "kneewatch.webTLS" -}}
{{- if and .Values.web.config (get .Values.web.config "tls_server_config") }}true{{ end }}
{{- end }}

{{/*
Non-empty when every request to kneewatch's listener needs credentials the
kubelet's probes cannot give: web.config has basic_auth_users, or its
tls_server_config requires a client certificate. exporter-toolkit applies
them to every path, /-/healthy and /-/ready too.
*/}}
{{- define "kneewatch.webAuth" -}}
{{- $web := .Values.web.config | default dict }}
{{- $tls := get $web "tls_server_config" | default dict }}
{{- if or (get $web "basic_auth_users") (has (get $tls "client_auth_type" | default "") (list "RequireAnyClientCert" "RequireAndVerifyClientCert")) }}true{{ end }}
{{- end }}

{{/*
A probe from values: (list $ .Values.xProbe). An httpGet probe without a
scheme gets HTTPS when the listener serves TLS, or the kubelet's plain GET
would fail against it. When the listener wants credentials (kneewatch.webAuth)
an httpGet probe without httpHeaders would always read 401 (or fail its
handshake), and the pod would never be ready and be restarted for ever: it
becomes a tcpSocket probe on the same port, with the same timings.
*/}}
{{- define "kneewatch.probe" -}}
{{- $root := index . 0 }}
{{- $probe := deepCopy (index . 1) }}
{{- if and $probe.httpGet (include "kneewatch.webAuth" $root) (not $probe.httpGet.httpHeaders) }}
{{- $_ := set $probe "tcpSocket" (dict "port" $probe.httpGet.port) }}
{{- $_ := unset $probe "httpGet" }}
{{- else if and $probe.httpGet (include "kneewatch.webTLS" $root) (not $probe.httpGet.scheme) }}
{{- $_ := set $probe.httpGet "scheme" "HTTPS" }}
{{- end }}
{{- toYaml $probe }}
{{- end }}
