package dashboards

import (
	"bufio"
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// readmePanels reads the README's "## Dashboards" section: for each
// "### Title (`uid`)" subsection, its table rows as panel title → question.
func readmePanels(readme []byte) map[string]map[string]string {
	heading := regexp.MustCompile("^### .*\\(`([a-z0-9-]+)`\\)\\s*$")
	row := regexp.MustCompile(`^\|\s*(.+?)\s*\|\s*(.+?)\s*\|\s*$`)
	out := map[string]map[string]string{}
	in, uid := false, ""
	sc := bufio.NewScanner(bytes.NewReader(readme))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			in, uid = line == "## Dashboards", ""
		case !in:
		case heading.MatchString(line):
			uid = heading.FindStringSubmatch(line)[1]
			out[uid] = map[string]string{}
		case uid != "" && row.MatchString(line):
			m := row.FindStringSubmatch(line)
			if m[1] == "Panel" || strings.HasPrefix(m[1], "---") {
				continue // the table's header and rule
			}
			out[uid][m[1]] = m[2]
		}
	}
	return out
}

// The README is the screenshot-free check: it lists every panel of every
// dashboard with the question it answers, which is the panel's description.
func TestTheReadmeListsEveryPanelWithItsQuestion(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]string{}
	for _, d := range builtDashboards(t, DefaultOptions()) {
		want[*d.Uid] = map[string]string{}
		for _, p := range panels(t, d) {
			want[*d.Uid][*p.Title] = *p.Description
		}
	}
	if diff := cmp.Diff(want, readmePanels(readme)); diff != "" {
		t.Errorf("README ## Dashboards and the built dashboards differ (-built +README):\n%s", diff)
	}
}

func TestTheReadmeParserSeesOnlyTheDashboardsSection(t *testing.T) {
	readme := []byte("## Other\n\n### X (`kneewatch-fleet`)\n\n| Panel | Q |\n|---|---|\n| Wrong | no |\n\n" +
		"## Dashboards\n\n### Fleet (`kneewatch-fleet`)\n\n| Panel | Question it answers |\n|---|---|\n| A | Why? |\n| B | How? |\n\n" +
		"## After\n\n| C | not a panel |\n")
	want := map[string]map[string]string{"kneewatch-fleet": {"A": "Why?", "B": "How?"}}
	if diff := cmp.Diff(want, readmePanels(readme)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
