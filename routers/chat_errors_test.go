package routers

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/osc-assistant/assistant/chat"
)

// TestChatErrorMapping: the one mapping of the chat's errors to answers.
func TestChatErrorMapping(t *testing.T) {
	cases := []struct {
		err    error
		status int
		detail string
	}{
		{&chat.RefusalError{Code: chat.CodeKeyRequired, Msg: "key"}, http.StatusForbidden, "key"},
		{&chat.RefusalError{Code: chat.CodeUnknownModel, Msg: "model"}, http.StatusBadRequest, "model"},
		{fmt.Errorf("wrapped: %w", &chat.RefusalError{Code: chat.CodeBudget, Msg: "budget"}), http.StatusBadGateway, "budget"},
		{chat.ErrSessionNotFound, http.StatusNotFound, errSessionNotFound.detail},
		{fmt.Errorf("resume: %w", chat.ErrNoOutstandingCall), http.StatusConflict, errNoOutstandingCall.detail},
		{chat.ErrSessionFull, http.StatusBadRequest, errSessionFull.detail},
	}
	for _, tc := range cases {
		got := chatAPIError(tc.err)
		if got == nil || got.status != tc.status || got.detail != tc.detail {
			t.Errorf("%v: %+v, want %d %q", tc.err, got, tc.status, tc.detail)
		}
	}
	if got := chatAPIError(fmt.Errorf("other")); got != nil {
		t.Errorf("an unrelated error mapped to %+v", got)
	}
}
