// Package config reads kneewatch's configuration: the YAML config file
// (targets, knee profiles, Kubernetes discovery, probes and alert thresholds)
// and the process settings (listen address, logging, evaluation interval and
// window) that come from flags and KNEEWATCH_* environment variables.
//
// The file is decoded strictly: defaults are set first, then the YAML is
// decoded over them with unknown keys rejected, then every field is
// validated. Every error names the file, the line and the field path
// ("kneewatch.yml: line 9: targets[2].engine: …", strictyaml's one format for
// every YAML file kneewatch reads), so `kneewatch serve --config.check` can
// say exactly what to fix. Secrets are never printed: Config.String masks them.
package config
