package judging

import (
	"encoding/json"

	"halu/runner/setting"
)

// Judge formats: how a judge (or an agent whose output halu reads) is
// asked to reply. The choice between them is made here and nowhere else:
// a suite passes its format to Schema and, where it reads the reply
// itself, to ByFormat.
const (
	// FormatJSON is structured output: the verdict's JSON schema goes with
	// the request, and the reply's JSON is read.
	FormatJSON = "json"
	// FormatText is free text in the paper's format, read by the suite's
	// text reader (and the authors' rule beside it).
	FormatText = "text"
)

// FormatSetting declares a suite's --judge-format (p holds the format).
func FormatSetting(p *string, help string) setting.Setting {
	return setting.Choice("judge-format", p, help, FormatJSON, FormatText)
}

// Schema is what a judge replying in format is sent: schema for JSON,
// nothing for text (JudgeWith then reads the reply as text).
func Schema(format, schema string) json.RawMessage {
	if format != FormatJSON || schema == "" {
		return nil
	}
	return json.RawMessage(schema)
}

// ByFormat is the reader of a reply in format: asJSON for JSON, asText
// for text.
func ByFormat[T any](format string, asJSON, asText func(raw string) (T, error)) func(raw string) (T, error) {
	if format == FormatJSON {
		return asJSON
	}
	return asText
}
