// Package rundir is the on-disk contract of a run directory — what a run
// leaves behind and every later command reads: manifest.json (what ran,
// with which models, prompts, data and settings, and the run format's
// version), records.jsonl (one line per completed item, appended as items
// finish, a torn last line cut off on the next open), errors.jsonl,
// summary.json and run.yaml; the lock that keeps one process per
// directory; atomic writes; the serving fingerprint that identifies a
// model as served; and the counts a run's sessions add up.
package rundir
