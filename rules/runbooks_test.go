package rules

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
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

// docNumber matches the numbers a runbook states about its alert:
// durations (2m, 15s, 1d), percentages, burn factors, KV-cache points and
// preemption rates.
var docNumber = regexp.MustCompile(`\d+(?:\.\d+)?(?:ms|s|m|h|d)\b|\d+(?:\.\d+)?%|\d+(?:\.\d+)?×|\d+(?:\.\d+)? points|\d+(?:\.\d+)? requests/s|\d+ requests\b`)

// firesWhen is a runbook's opening paragraph: severity and when it fires.
func firesWhen(text string) string {
	_, body, _ := strings.Cut(text, "\n\n")
	para, _, _ := strings.Cut(body, "\n\n")
	return strings.Join(strings.Fields(para), " ")
}

func docNumbers(text string) []string {
	ns := docNumber.FindAllString(text, -1)
	slices.Sort(ns)
	return slices.Compact(ns)
}

// TestRunbooksStateTheRulesNumbers: each runbook's opening paragraph states
// exactly the numbers the default rule is built from (RunbookParameters),
// and the index's row for the alert states none the rule does not have. A
// `for` changed in Options and not in the runbook, or a runbook typo, fails
// here, naming both.
func TestRunbooksStateTheRulesNumbers(t *testing.T) {
	params := RunbookParameters(DefaultOptions())
	index, err := os.ReadFile(filepath.Join(runbookDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range Alerts() {
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(runbookDir, name+".md"))
			if err != nil {
				t.Fatal(err)
			}
			want := params[name]
			if got := docNumbers(firesWhen(string(b))); !slices.Equal(got, want) {
				t.Errorf("%s.md states %v when it fires; the rule is built from %v\n%s", name, got, want, firesWhen(string(b)))
			}
			checkRow(t, want, tableRow(index, "| ["+name+"]"), "docs/runbooks/README.md's row for "+name, "README.md has no table row for "+name)
			checkRow(t, want, tableRow(readme, "| `"+name+"`"), "README.md's alert row for "+name, "the project README's alert table has no row for "+name)
		})
	}
}

// TestRunbookNumbersFollowTheOptions: the numbers come from Options, so a
// changed option changes them (the check above is not against constants).
func TestRunbookNumbersFollowTheOptions(t *testing.T) {
	o := DefaultOptions()
	o.HeadroomExhausted.For = 7 * time.Minute
	if got := RunbookParameters(o)[AlertHeadroomExhausted]; !slices.Contains(got, "7m") {
		t.Errorf("with HeadroomExhausted.For 7m the runbook parameters are %v", got)
	}
	o.HeadroomExhausted.QuickRequests = 0
	if got := RunbookParameters(o)[AlertHeadroomExhausted]; slices.Contains(got, "50 requests") || slices.Contains(got, "25%") {
		t.Errorf("without the quick arm the runbook parameters are %v", got)
	}
}

// tableRow is the last line of doc that starts with prefix, or "".
func tableRow(doc []byte, prefix string) string {
	var row string
	for _, l := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(l, prefix) {
			row = l
		}
	}
	return row
}

// checkRow fails when a table row is missing or states a number want does
// not hold; what names the row in the error.
func checkRow(t *testing.T, want []string, row, what, missing string) {
	t.Helper()
	if row == "" {
		t.Fatal(missing)
	}
	for _, n := range docNumbers(row) {
		if !slices.Contains(want, n) {
			t.Errorf("%s states %s, which its rule does not have (%v):\n%s", what, n, want, row)
		}
	}
}
