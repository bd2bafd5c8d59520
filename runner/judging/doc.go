// Package judging reads judge replies — halu's equivalent of lm-eval's
// filters, in one home. A suite asks for a verdict with JudgeWith (or
// JudgeAs): the request goes through the engine's judge contract (an
// Asker), the reply is read by Read — the one reading path, which the tests
// drive too: cleaned (reasoning removed, the evaluated text the judge
// quotes removed, a word cut at the cap dropped, what precedes the judge's
// last revision dropped), then read — a JSON
// verdict under a schema, or the suite's text reader, or the authors' own
// rule beside it with the disagreements recorded — and validated. Readers
// read a verdict only where it is stated as the answer (Labelled, Letters),
// never from prose; a reply that does not read is a failure, never a
// guess, and a reply that states two values for a field is read as
// neither (ErrTwoValues: counted apart; its repair turn is held to the
// verdict's schema, Reader.Schema). The corpus of hand-written replies in testdata/replies tests
// every reader (TestReplyCorpus).
package judging
