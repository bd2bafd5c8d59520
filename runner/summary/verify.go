package summary

import (
	"fmt"
	"sort"
	"strings"

	"halu/runner/rundir"
)

// VerifiedStages compares, call by call, a verification run's records
// (again: the run once more, a sample of its cached calls asked live,
// rundir.CallLog.Reasked) with the verified run's (recorded), per model,
// stage and kind of call. Bytes were compared when the call was asked
// again; a judge reply that differs is then compared by its reading: the
// verdict as read (CallLog.Parsed, one reader for both) in the recorded
// item's call of the same cache key.
func VerifiedStages(recorded, again []rundir.Record) []rundir.VerifiedStage {
	parsed := map[string]map[string]string{} // item → cache key → reading recorded
	for _, r := range recorded {
		for _, c := range r.Calls {
			if c.Kind == "judge" || c.Kind == "repair" {
				if parsed[r.Item] == nil {
					parsed[r.Item] = map[string]string{}
				}
				parsed[r.Item][c.Key] = c.Parsed
			}
		}
	}
	type key struct{ model, stage, kind string }
	at := map[key]*rundir.VerifiedStage{}
	for _, r := range again {
		for _, c := range r.Calls {
			ra := c.Reasked
			if ra == nil && !c.Uncached {
				continue
			}
			k := key{c.Model, c.Stage, c.Kind}
			s := at[k]
			if s == nil {
				s = &rundir.VerifiedStage{Model: c.Model, Stage: c.Stage, Kind: c.Kind}
				at[k] = s
			}
			if ra == nil {
				s.Uncached++
				continue
			}
			switch {
			case c.Kind == "embed":
				s.Asked += ra.Texts
				s.Identical += ra.Identical
				s.Same += ra.Close - ra.Identical
				s.Different += ra.Texts - ra.Close
			case ra.Identical > 0:
				s.Asked++
				s.Identical++
			case c.Kind == "judge" || c.Kind == "repair":
				s.Asked++
				was, ok := parsed[r.Item][c.Key]
				switch {
				case !ok:
					s.Unread++
				case was != "" && was == c.Parsed:
					s.Same++
				default:
					s.Different++
				}
			default:
				s.Asked++
				s.Different++
			}
		}
	}
	out := make([]rundir.VerifiedStage, 0, len(at))
	for _, s := range at {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Model != b.Model {
			return a.Model < b.Model
		}
		if a.Stage != b.Stage {
			return a.Stage < b.Stage
		}
		return a.Kind < b.Kind
	})
	return out
}

// VerifiedTotals adds up a verification's stages: calls asked again, those
// identical, those that read the same (identical included), the judge
// calls whose recorded reading was not found, and the calls not in the
// cache that were asked live and compared with nothing.
func VerifiedTotals(st []rundir.VerifiedStage) (asked, identical, sameReading, unread, uncached int) {
	for _, s := range st {
		asked += s.Asked
		identical += s.Identical
		sameReading += s.Identical + s.Same
		unread += s.Unread
		uncached += s.Uncached
	}
	return
}

// VerifiedLine is a verification in one line, as the report shows it
// beside the run's provenance: "verified 2026-11-29 by halu …: 48 of 50
// calls identical, 50 of 50 read the same".
func VerifiedLine(v *rundir.Verification) string {
	asked, ident, same, unread, uncached := VerifiedTotals(v.Stages)
	if asked == 0 {
		return fmt.Sprintf("verified %s (build %s): no call was asked again — nothing verified", v.Time.Format("2006-01-02"), v.Build)
	}
	line := fmt.Sprintf("verified %s (build %s, %s): %d of %d calls asked again came back identical, %d of %d read the same",
		v.Time.Format("2006-01-02"), v.Build, strings.Join(v.Servers, ", "), ident, asked, same, asked-unread)
	if unread > 0 {
		line += fmt.Sprintf(" (%d judge replies differ with no recorded reading to compare)", unread)
	}
	if uncached > 0 {
		line += fmt.Sprintf("; %d calls of the run were not in the cache and were asked live, compared with nothing (their replies are in the figures recomputed)", uncached)
	}
	return line
}

// ReaskedNote says, for a run some of whose cached calls were asked again
// (a run's --verify, or a halu verify run), how many came back identical
// and which replies the records hold; "" when none was.
func ReaskedNote(recs []rundir.Record) string {
	asked, identical, kept, again := 0, 0, false, false
	for _, r := range recs {
		for _, c := range r.Calls {
			ra := c.Reasked
			if ra == nil {
				continue
			}
			switch {
			case c.Kind == "embed":
				asked += ra.Texts
			default:
				asked++
			}
			identical += ra.Identical
			kept = kept || ra.Again != ""
			again = again || ra.Recorded != ""
		}
	}
	if asked == 0 {
		return ""
	}
	line := fmt.Sprintf("verify: %d of %d cached calls asked the server again came back identical", identical, asked)
	switch {
	case kept:
		line += " (the records keep the recorded replies; a reply given otherwise is in its call's log, reasked.again)"
	case again:
		line += " (the records hold the replies given again; the recorded one is in its call's log, reasked.recorded)"
	}
	return line
}
