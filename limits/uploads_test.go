// An external test package, so it may import workspace even once workspace imports limits.
package limits_test

import (
	"slices"
	"testing"

	"github.com/osc-assistant/assistant/limits"
	"github.com/osc-assistant/assistant/workspace"
)

// TestUploadBounds pins the runtime.python.uploads bounds to issue 14 and checks each default
// lies within its range.
func TestUploadBounds(t *testing.T) {
	u := limits.Uploads
	tests := []struct {
		name      string
		got, want limits.Bound
	}{
		{"MaxFileMB", u.MaxFileMB, limits.Bound{Default: 25, Min: 1, Max: 100}},
		{"MaxSessionMB", u.MaxSessionMB, limits.Bound{Default: 100, Min: 1, Max: 500}},
		{"MaxFiles", u.MaxFiles, limits.Bound{Default: 16, Min: 1, Max: 64}},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s = %+v, want %+v", tc.name, tc.got, tc.want)
		}
		if b := tc.got; b.Max == 0 || b.Default < b.Min || b.Default > b.Max {
			t.Errorf("%s: default %d outside [%d, %d]", tc.name, b.Default, b.Min, b.Max)
		}
	}
	// A session must be able to hold at least one file of the largest size allowed.
	if u.MaxSessionMB.Max < u.MaxFileMB.Max {
		t.Errorf("MaxSessionMB.Max %d < MaxFileMB.Max %d", u.MaxSessionMB.Max, u.MaxFileMB.Max)
	}
	if u.MaxSessionMB.Default < u.MaxFileMB.Default {
		t.Errorf("MaxSessionMB.Default %d < MaxFileMB.Default %d", u.MaxSessionMB.Default, u.MaxFileMB.Default)
	}
}

// TestUploadTypes pins the fixed set and the default, and keeps the set the config accepts the
// same as the set workspace.CheckUpload verifies: a type config allows but the checker does not
// know would be refused at upload time, one the checker knows but config refuses is dead code.
func TestUploadTypes(t *testing.T) {
	if want := []string{"csv", "tsv", "txt", "json", "xlsx", "parquet"}; !slices.Equal(limits.UploadTypes, want) {
		t.Errorf("UploadTypes = %v, want %v", limits.UploadTypes, want)
	}
	if want := []string{"csv", "tsv", "txt", "json", "xlsx"}; !slices.Equal(limits.DefaultUploadTypes, want) {
		t.Errorf("DefaultUploadTypes = %v, want %v", limits.DefaultUploadTypes, want)
	}
	for _, typ := range limits.DefaultUploadTypes {
		if !slices.Contains(limits.UploadTypes, typ) {
			t.Errorf("default type %q is not in UploadTypes", typ)
		}
	}
	if !slices.Equal(limits.UploadTypes, workspace.UploadTypes) {
		t.Errorf("limits.UploadTypes %v differs from workspace.UploadTypes %v", limits.UploadTypes, workspace.UploadTypes)
	}
}
