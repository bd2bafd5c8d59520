package rundir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// VerificationFile holds what halu verify found of a run, in the run's
// directory: the run is the verified one, the calls asked again live in a
// verification run of its own (Dir).
const VerificationFile = "verification.json"

// Verification is one halu verify of a run: when, by which build, against
// which servers, on which sample, and how much came back the same.
type Verification struct {
	Time    time.Time `json:"time"`
	Build   string    `json:"build"`
	Servers []string  `json:"servers"`
	// Records is the sha256 of the run's records file when it was
	// verified: the verification is of the run while its records still
	// have it (a rerun or a resume that changes them leaves it of an
	// earlier state; VerifiedState).
	Records string `json:"records_sha256"`
	// Dir is the verification run's directory: the run again, its sampled
	// calls asked live (records with CallLog.Reasked).
	Dir string `json:"dir"`
	// Share is the share of cached calls drawn (by a hash of Seed and the
	// call's cache key), of Calls the run made.
	Share float64 `json:"share"`
	Seed  int64   `json:"seed"`
	Calls int     `json:"calls"`
	// Stages are the counts per model, stage and kind of call.
	Stages []VerifiedStage `json:"stages"`
	// Figures are headline figures recomputed with the replies given again
	// beside the recorded ones.
	Figures []VerifiedFigure `json:"figures,omitempty"`
	// FiguresError says why the figures could not be recomputed ("" when
	// they were, or the suite has none).
	FiguresError string `json:"figures_error,omitempty"`
}

// VerifiedStage counts the calls of one model, stage and kind asked again
// (an embedding request counts each text asked again): Identical came back
// byte for byte (an embedding: bit for bit); Same differed in bytes and
// read the same (a judge's verdict as read, an embedding within
// engine.EmbedTolerance); Different read otherwise (a generation that
// differs is different: the reply is its reading). Unread are judge calls
// whose replies differ and whose recorded reading the verified run's
// records do not hold (no call there with the same cache key): counted
// apart, in no share. Uncached are calls the cache did not hold that no
// reply given otherwise led to (CallLog.Uncached): asked live, compared
// with nothing.
type VerifiedStage struct {
	Model     string `json:"model"`
	Stage     string `json:"stage"`
	Kind      string `json:"kind"`
	Asked     int    `json:"asked"`
	Identical int    `json:"identical"`
	Same      int    `json:"same_reading"`
	Different int    `json:"different"`
	Unread    int    `json:"unread,omitempty"`
	Uncached  int    `json:"uncached,omitempty"`
}

// VerifiedFigure is a metric of one model on the N units both runs scored:
// its mean as recorded and with the replies given again, and the paired
// difference (again − recorded) with its 95% interval (Lo, Hi); each left
// out when it could not be computed (N 0). RecordedOnly and AgainOnly
// count the units scored in one run only (unscored in the other: a reply
// given again that reads as nothing, or one that now reads): in no figure.
type VerifiedFigure struct {
	Model        string   `json:"model"`
	Metric       string   `json:"metric"`
	N            int      `json:"n"`
	RecordedOnly int      `json:"scored_as_recorded_only"`
	AgainOnly    int      `json:"scored_again_only"`
	Recorded     *float64 `json:"recorded,omitempty"`
	Again        *float64 `json:"again,omitempty"`
	Diff         *float64 `json:"diff,omitempty"`
	Lo           *float64 `json:"lo,omitempty"`
	Hi           *float64 `json:"hi,omitempty"`
}

// RecordsSum is the sha256 of the records file of the run in dir.
func RecordsSum(dir string) (string, error) {
	return HashFile(filepath.Join(dir, RecordsFile))
}

// VerifiedState says whether v verified the run in dir as its records are
// now: its records file has the sha256 it had when verified. now is that
// sha256 today.
func VerifiedState(dir string, v *Verification) (current bool, now string, err error) {
	now, err = RecordsSum(dir)
	if err != nil {
		return false, "", fmt.Errorf("run %s: %w", dir, err)
	}
	return v.Records != "" && v.Records == now, now, nil
}

// WriteVerification records v in the run directory dir.
func WriteVerification(dir string, v *Verification) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return WriteFileAtomic(filepath.Join(dir, VerificationFile), append(b, '\n'))
}

// ReadVerification reads the verification of the run in dir; nil when the
// run was never verified.
func ReadVerification(dir string) (*Verification, error) {
	b, err := os.ReadFile(filepath.Join(dir, VerificationFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var v Verification
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("run %s: %s: %w", dir, VerificationFile, err)
	}
	return &v, nil
}
