package knee

import (
	"errors"

	"github.com/kneewatch/kneewatch/strictyaml"
	"github.com/kneewatch/kneewatch/workload"
)

// workload checks the recorded mix with the workload package's own rules. A
// profile measured with a trace replay has no distributions, only the
// trace's means, so an empty mix is valid.
func (v *validator) workload(w *WorkloadInfo) {
	if w.Mix.Prompt != (workload.Dist{}) || w.Mix.Output != (workload.Dist{}) {
		if err := w.Mix.Validate(); err != nil {
			var fe *strictyaml.FieldError
			if errors.As(err, &fe) {
				v.add("workload."+fe.Field, "%s", fe.Message)
			} else {
				v.add("workload", "%v", err)
			}
		}
	}
	v.nonNegative("workload.meanPromptTokens", w.MeanPromptTokens)
	v.nonNegative("workload.p999PromptTokens", w.P999PromptTokens)
	v.nonNegative("workload.meanOutputTokens", w.MeanOutputTokens)
	v.nonNegative("workload.promptTokensCV", w.PromptTokensCV)
	v.nonNegative("workload.outputTokensCV", w.OutputTokensCV)
}
