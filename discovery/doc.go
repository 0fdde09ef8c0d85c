// Package discovery finds serving replicas in Kubernetes and turns them into
// collector targets.
//
// Replicas are the pods matching the config's label selector in its
// namespaces (every namespace when none is listed) that are Running, have a
// pod IP and are not being deleted. client-go informers keep a local cache of
// those pods, filtered by the API server; every change (a pod appears, is
// relabelled, changes phase or IP, or goes away) rebuilds the whole target set
// and hands it to a sink, usually collector.Watcher.SetTargets, which drops a
// replica that is gone so its series disappear on the next round.
//
// Per pod:
//   - replica: the pod's name, which is also the pod label dcgm-exporter puts
//     on the pod's GPUs (pods of one name in several namespaces are named
//     namespace/name instead, to stay unique);
//   - metrics URL: scheme://pod-ip:port/path, where the port and path come
//     from the pod's metrics-port and metrics-path annotations or the config;
//   - OpenAI base URL: the openai-url annotation, or the metrics host and port
//     plus openai_path;
//   - model: the model label, or (when there is none) the model the engine's
//     own metrics report, which the collector reads;
//   - engine: the engine label, or auto-detected by the collector;
//   - knee profile: the profile annotation or label, else the one profile whose
//     match names the pod's model and GPU (see matchProfile);
//   - GPU metrics: the dcgm-exporter pod on the same node, with the replica's
//     GPUs picked by the pod and namespace labels dcgm-exporter adds.
//
// Discovery only reads pods: it needs get, list and watch on pods and
// nothing else.
package discovery
