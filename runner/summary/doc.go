// Package summary is what a run's records become: tables in the papers'
// layouts, figures with their intervals, n and unscored counts (a figure
// over nothing reads "–"), charts, notes, quality gates that fail on what
// was not measured, per-unit outcomes for paired comparisons, and the
// flags a report's sample browser filters records by.
package summary
