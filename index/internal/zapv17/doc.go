// Package zapv17 owns every line of halu that knows the bytes of bleve's
// zap v17 segment files, so that no other package does: a faster writer
// of new segments (Plugin, the same bytes as zap's own builder) and a
// reader of a term's postings straight from a segment file (OpenDict,
// Dict.Postings, Source) for the literature index's pruned top-k walk.
//
// Nothing here is switched on by importing it: the literature index calls
// Install when it opens, choosing halu's writer or zap's own (halu index
// build --segment-writer zap), and falls back to zap's iterator wherever
// OpenDict or a list's count says the layout is not the one read here
// (ErrLayout). CheckedZapx names the zapx release the layout was checked
// against; TestZapxIsTheOneChecked fails when go.mod names another.
//
// The package is internal to index: the layout is zapx's, not a promise
// halu makes to anyone else.
package zapv17
