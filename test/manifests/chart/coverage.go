package chart

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

var valueRow = regexp.MustCompile("^\\| `([A-Za-z0-9_.]+)` \\|")

// DocumentedValues are the values named in the first column of the tables
// under "## Values" in docs/helm.md.
func DocumentedValues(doc string) []string {
	var out []string
	in := false
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "## ") {
			in = strings.TrimSpace(line) == "## Values"
			continue
		}
		if m := valueRow.FindStringSubmatch(line); in && m != nil {
			out = append(out, m[1])
		}
	}
	return out
}

// leaves flattens values into dotted paths, not descending below a path in
// stop (a value documented as one, such as affinity).
func leaves(prefix string, v interface{}, stop map[string]bool, out map[string]bool) {
	m, ok := v.(map[string]interface{})
	if !ok || (prefix != "" && stop[prefix]) || (prefix != "" && len(m) == 0) {
		out[prefix] = true
		return
	}
	for k, sub := range m {
		p := k
		if prefix != "" {
			p = prefix + "." + k
		}
		leaves(p, sub, stop, out)
	}
}

// CheckCoverage verifies that the documentation and the checks keep up with
// values.yaml: every value in it is documented, every documented value is
// in it, and every documented value is set by at least one case.
func CheckCoverage(defaults map[string]interface{}, documented []string, cases []Case) error {
	if len(documented) == 0 {
		return fmt.Errorf("docs/helm.md: no values table under \"## Values\"")
	}
	doc := map[string]bool{}
	for _, d := range documented {
		doc[d] = true
	}
	inValues := map[string]bool{}
	leaves("", defaults, doc, inValues)
	var missing []string
	for p := range inValues {
		if !doc[p] {
			missing = append(missing, p)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		return fmt.Errorf("values.yaml has values docs/helm.md does not document: %s", strings.Join(missing, ", "))
	}
	set := map[string]bool{}
	for _, c := range cases {
		vals, err := Values(c.Values)
		if err != nil {
			return fmt.Errorf("values %q: %w", c.Name, err)
		}
		leaves("", map[string]interface{}(vals), map[string]bool{}, set)
	}
	var unknown, unset []string
	for _, d := range documented {
		if !inValues[d] {
			unknown = append(unknown, d)
		}
		covered := false
		for p := range set {
			covered = covered || p == d || strings.HasPrefix(p, d+".")
		}
		if !covered {
			unset = append(unset, d)
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("docs/helm.md documents values that are not in values.yaml: %s", strings.Join(unknown, ", "))
	}
	if len(unset) > 0 {
		return fmt.Errorf("no case of chart.Cases sets these documented values: %s", strings.Join(unset, ", "))
	}
	return nil
}
