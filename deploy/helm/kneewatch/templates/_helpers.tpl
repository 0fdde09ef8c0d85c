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
