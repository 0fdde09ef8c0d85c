package rules

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// runbookDir holds one Markdown runbook per alert, which the alerts'
// runbook_url annotations link to.
var runbookDir = filepath.Join("..", "docs", "runbooks")

// runbookSections are the headings every runbook has, in this order.
var runbookSections = []string{
	"## What it means",
	"## Likely causes",
	"## What to check first",
	"## How to mitigate",
	"## When it is a false alarm",
}

func TestEveryAlertHasARunbook(t *testing.T) {
	for _, name := range Alerts() {
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(runbookDir, name+".md"))
			if err != nil {
				t.Fatalf("alert %s has no runbook: %v", name, err)
			}
			text := string(b)
			if !strings.HasPrefix(text, "# "+name+"\n") {
				t.Errorf("runbook does not start with the heading # %s", name)
			}
			last := -1
			for _, s := range runbookSections {
				i := strings.Index(text, "\n"+s+"\n")
				if i < 0 {
					t.Errorf("runbook has no %q section", s)
					continue
				}
				if i < last {
					t.Errorf("section %q is out of order", s)
				}
				last = i
			}
			if !strings.Contains(text, "kneewatch / ") {
				t.Error("runbook names no dashboard to check first")
			}
		})
	}
}

func TestNoRunbookWithoutAnAlert(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(runbookDir, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".md")
		if name != "README" && !slices.Contains(Alerts(), name) {
			t.Errorf("%s documents %s, which the rules no longer have", f, name)
		}
	}
}

func TestRunbookIndexListsEveryAlertAndTheRulerJoin(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(runbookDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	for _, name := range Alerts() {
		if !strings.Contains(text, "["+name+"]("+name+".md)") {
			t.Errorf("README.md does not link %s", name)
		}
	}
	o := DefaultOptions()
	for _, want := range []string{o.rulerHeadroomRecord(), o.rulerInflightRecord(), "target_label: replica", "JoinLabel"} {
		if !strings.Contains(text, want) {
			t.Errorf("README.md does not document the ruler join: %q is missing", want)
		}
	}
}
