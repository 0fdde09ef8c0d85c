// Package discovery finds serving replicas in Kubernetes and turns them into
// collector targets.
//
// Replicas are the pods matching the config's label selector in its
// namespaces (every namespace when none is listed) that are Running and
// Ready, have a pod IP and are not being deleted. A Running pod that is not
// Ready (loading its model, failing its readiness probe, taken out of
// rotation) gets no traffic from its Service and is not a replica: it is
// only counted, in kneewatch_discovery_pods{state="unready"}. client-go
// informers keep a local cache of those pods, filtered by the API server;
// every change (a pod appears, is relabelled, changes phase, readiness or
// IP, or goes away) rebuilds the whole target set and hands it to a sink,
// usually watch.Watcher.SetTargets, which drops a replica that is gone
// so its series disappear on the next round.
//
// Per pod:
//   - replica: namespace/pod, always, with Namespace and Pod set: a name
//     that depended on other pods would change (and restart the replica's
//     series) when a pod of the same name appears in another namespace;
//   - metrics URL: scheme://pod-ip:port/path, where the port and path come
//     from the pod's metrics-port and metrics-path annotations or the config;
//   - OpenAI base URL: the openai-url annotation, or the metrics host and port
//     plus openai_path;
//   - model: the model annotation (kneewatch.dev/model, the name as is), else
//     the model label with "--" read as "/" (label values cannot hold "/"),
//     else the model the engine's own metrics report, which the collector
//     reads. A declared model only picks the profile, and is checked against
//     the engine's once scraped: a contradiction leaves the replica without
//     a profile (no_profile, not engine_down) and is a problem, logged once;
//   - engine: the engine label, or auto-detected by the collector;
//   - knee profile: the profile annotation or label, else the one profile whose
//     match names the pod's model and GPU (see matchProfile). A replica whose
//     profile waits for its engine's model is matched as soon as the watcher
//     has it (checked in memory every second), not on a fixed refresh;
//   - GPU metrics: the dcgm-exporter pod on the same node, with the replica's
//     GPUs picked by the pod and namespace labels dcgm-exporter adds.
//
// Discovery only reads pods: it needs get, list and watch on pods in the
// watched namespaces, and in the dcgm-exporter's namespace for the GPU
// join. Without the latter it still evaluates every replica, without GPU
// metrics, and says so in a warning naming that namespace.
//
// Its health is exported (kneewatch_discovery_synced,
// kneewatch_discovery_last_sync_timestamp_seconds,
// kneewatch_discovery_errors_total by kind) and logged when it changes,
// not on every retry. A list or watch the API server does not answer is
// retried within seconds (see instrument), so discovery catches up soon
// after an outage.
package discovery
