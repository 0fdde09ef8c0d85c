package main

import (
	"errors"
	"log/slog"
	"math"
	"os"
	"runtime/debug"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// applyMemoryLimit sets the Go runtime's soft memory limit to ratio × the
// container's memory limit, as Prometheus's --auto-gomemlimit does. The
// scrape budget (watch) bounds what the collector holds live, not the
// garbage between collections: with no limit the GC lets the heap grow to
// twice the live set, and a pod whose limit sits above its live set but
// under twice it is killed for garbage. With the limit, the GC collects
// harder as the heap nears it. A GOMEMLIMIT the operator set wins, and a
// process outside a memory-limited cgroup (a laptop) is left as it is.
// provider reads the limit (memlimit.FromCgroup in serve).
func applyMemoryLimit(logger *slog.Logger, ratio float64, provider memlimit.Provider) {
	if ratio == 0 {
		logger.Debug("the automatic Go memory limit is off (--auto-gomemlimit.ratio 0)")
		return
	}
	if v := os.Getenv("GOMEMLIMIT"); v != "" {
		logger.Info("GOMEMLIMIT is set; the container's memory limit is not read", "GOMEMLIMIT", v)
		return
	}
	// The library's Set would also read its own AUTOMEMLIMIT variable,
	// which would override the ratio: kneewatch's settings come from its
	// flags and KNEEWATCH_* variables, so the limit is read and set here.
	limit, err := memlimit.ApplyRatio(provider, ratio)()
	switch {
	case errors.Is(err, memlimit.ErrNoLimit) || (err == nil && limit >= math.MaxInt64):
		logger.Debug("the container's memory is not limited; the Go memory limit is left unset")
	case err != nil:
		logger.Debug("no container memory limit was found; the Go memory limit is left unset", "err", err)
	default:
		debug.SetMemoryLimit(int64(limit))
		logger.Info("Go memory limit set from the container's", "limit_bytes", limit, "ratio", ratio)
	}
}
