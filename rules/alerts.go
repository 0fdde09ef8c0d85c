package rules

import (
	"fmt"

	"github.com/prometheus/prometheus/model/rulefmt"
)

// alertGroup holds every alert, in the order Alerts lists them.
func (g *generator) alertGroup() Group {
	built := []rulefmt.Rule{
		g.headroomLow(), g.headroomExhausted(), g.pastKnee(),
		g.burn(AlertGoodputSLOBurnFast, true, false, g.o.SLO.Page, g.o.SLO.PageFor),
		g.burn(AlertGoodputSLOBurnSlow, false, false, g.o.SLO.Ticket, g.o.SLO.TicketFor),
		g.burn(AlertModelSLOBurnFast, true, true, g.o.SLO.Page, g.o.SLO.PageFor),
		g.burn(AlertModelSLOBurnSlow, false, true, g.o.SLO.Ticket, g.o.SLO.TicketFor),
		g.kvCachePressure(), g.probesFailing(), g.probeSuccessLow(),
		g.fleetCapacityLow(), g.kneeProfileMissing(), g.kneeProfileDrift(),
		g.targetDown(), g.absentAlert(),
	}
	for i, name := range Alerts() {
		if i >= len(built) || built[i].Alert != name {
			g.errs = append(g.errs, fmt.Errorf("alert %d is not %s: Alerts() and alertGroup disagree", i, name))
		}
	}
	return g.group("kneewatch-alerts",
		"kneewatch alerts. Each has a runbook at runbook_url. Severity "+g.o.PageSeverity+" pages; "+
			g.o.TicketSeverity+" opens a ticket.\nRoute an inhibit rule so a firing "+AlertHeadroomExhausted+
			" silences "+AlertHeadroomLow+", and\n"+AlertProbesFailing+" silences "+AlertProbeSuccessLow+
			", for the same replica.",
		built)
}
