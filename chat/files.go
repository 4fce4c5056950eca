package chat

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/store"
	"github.com/osc-assistant/assistant/workspace"
)

// errFilesUnreadable is why a server run did not start when the session's attached files could
// not be read whole (the store failed, or a file's bytes no longer match its digest). The
// detail goes to the log, not to the model.
var errFilesUnreadable = errors.New("the files attached to this conversation could not be read")

// uploadsOn reports whether c lets readers attach files to a session.
func uploadsOn(c *config.Community) bool {
	if c == nil {
		return false
	}
	_, ok := c.TakesUploads()
	return ok
}

// filesMark is the fingerprint of a set of attached files: their names and digests, so a file
// replaced under the same name is a change, and so is a file deleted.
func filesMark(files []store.SessionFile) string {
	files = slices.SortedFunc(slices.Values(files), func(a, b store.SessionFile) int { return cmp.Compare(a.Name, b.Name) })
	h := sha256.New()
	for _, f := range files {
		fmt.Fprintf(h, "%s\x00%s\x00", f.Name, f.SHA256)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// lastFilesMark is the fingerprint of the newest files note in history, if there is one.
func lastFilesMark(history []Message) (string, bool) {
	for i := len(history) - 1; i >= 0; i-- {
		for _, b := range slices.Backward(history[i].Content) {
			if b.Files != "" {
				return b.Files, true
			}
		}
	}
	return "", false
}

// filesNote is the note of the session's attached files to add to its next message, or nil
// when the model already reads the same set in the part of the history it is sent (after
// trimming) — or there are no files and it was never told of any. So the model is told once
// per change, and again only if the note it had was trimmed away. The note is data in a fence
// (workspace.FilesNote), marked with the set's fingerprint, which is how the next turn knows
// what was last told. A store failure is logged and gives no note: the next message tries
// again.
func (e *Engine) filesNote(ctx context.Context, c *config.Community, id string) *Block {
	if !uploadsOn(c) {
		return nil
	}
	history, err := e.history(ctx, c.ID, id)
	if err != nil {
		e.log().Warn("reading a history for its files note failed", slog.String("community", c.ID), slog.Any("error", err))
		return nil
	}
	files, err := e.Store.Files(ctx, c.ID, id)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		e.log().Warn("listing a session's files failed", slog.String("community", c.ID), slog.Any("error", err))
		return nil
	}
	mark := filesMark(files)
	last, told := lastFilesMark(trimHistory(history, maxConversationTokens))
	if (told && last == mark) || (!told && len(files) == 0) {
		return nil
	}
	attached := make([]workspace.Attached, 0, len(files))
	for _, f := range files {
		a := workspace.Attached{Name: f.Name, Bytes: f.Bytes, Type: f.Type, SHA256: f.SHA256}
		if f.Type == "csv" || f.Type == "tsv" {
			// Only the first line is shown; a file gone since the listing just has none.
			if _, data, err := e.Store.File(ctx, c.ID, id, f.Name); err == nil {
				a.Header = workspace.HeaderLine(f.Type, data)
			}
		}
		attached = append(attached, a)
	}
	return &Block{Type: BlockText, Text: workspace.FilesNote(attached), Files: mark}
}

// withNote is m with the files note, if any, after its other blocks (a tool result message
// keeps its results first, as the APIs want).
func withNote(m Message, note *Block) Message {
	if note != nil {
		m.Content = append(m.Content, *note)
	}
	return m
}

// runData is what a server run of the session reads at /data/<name>: its attached files, name
// → bytes, each checked against the digest it was stored with. It is nil when c takes no
// uploads. The store bounds the whole to the session's limits.
func (e *Engine) runData(ctx context.Context, c *config.Community, id string) (map[string][]byte, error) {
	if !uploadsOn(c) {
		return nil, nil
	}
	files, err := e.Store.Files(ctx, c.ID, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing the session's files: %w", err)
	}
	data := make(map[string][]byte, len(files))
	for _, f := range files {
		meta, b, err := e.Store.File(ctx, c.ID, id, f.Name)
		if errors.Is(err, store.ErrNotFound) {
			continue // deleted since the listing
		}
		if err != nil {
			return nil, fmt.Errorf("reading the attached file %s: %w", f.Name, err)
		}
		sum := sha256.Sum256(b)
		if int64(len(b)) != meta.Bytes || hex.EncodeToString(sum[:]) != meta.SHA256 {
			return nil, fmt.Errorf("the attached file %s does not match its digest", f.Name)
		}
		data[f.Name] = b
	}
	return data, nil
}
