package sim

import (
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
)

// malformedExposition is what /metrics returns under the metrics_malformed
// fault: a plausible start that breaks mid-line, as a truncated or corrupted
// scrape does.
const malformedExposition = `# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="sim",engine="0"} 3
vllm:num_requests_waiting{model_name="sim",engine=0"} NaN garbage
# TYPE vllm:kv_cache_usage_perc histogram gauge
{{{ not an exposition
`

// handleMetrics serves the replica's registry, after the metrics faults:
// metrics_delay waits first, metrics_down answers 500, metrics_malformed
// sends text that does not parse, and drop_metrics leaves families out.
func (r *Replica) handleMetrics(w http.ResponseWriter, req *http.Request) {
	gatherer, f := r.metricsView()
	if f.metricsDelay > 0 {
		t := time.NewTimer(f.metricsDelay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-req.Context().Done():
			return
		}
	}
	if f.metricsDown {
		http.Error(w, "metrics unavailable (fault metrics_down)", http.StatusInternalServerError)
		return
	}
	if f.metricsMalformed {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = w.Write([]byte(malformedExposition))
		return
	}
	if len(f.dropMetrics) > 0 {
		gatherer = dropFamilies(gatherer, f.dropMetrics)
	}
	promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}).ServeHTTP(w, req)
}

// dropFamilies gathers g without the named metric families.
func dropFamilies(g prometheus.Gatherer, names []string) prometheus.Gatherer {
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		mfs, err := g.Gather()
		mfs = slices.DeleteFunc(mfs, func(mf *dto.MetricFamily) bool { return slices.Contains(names, mf.GetName()) })
		return mfs, err
	})
}
