package chat

import (
	"strings"
	"testing"
)

func human(n int) Message {
	return Message{Role: RoleUser, Content: []Block{{Type: BlockText, Text: strings.Repeat("h", n*charsPerToken)}}}
}

func answer(n int) Message {
	return Message{Role: RoleAssistant, Content: []Block{{Type: BlockText, Text: strings.Repeat("a", n*charsPerToken)}}}
}

func toolTurn(n int) (Message, Message) {
	use := Message{Role: RoleAssistant, Content: []Block{{Type: BlockToolUse, ToolUseID: "t", Name: "execute_code", Input: []byte("{}")}}}
	res := Message{Role: RoleUser, Content: []Block{{Type: BlockToolResult, ToolUseID: "t", Content: []Block{{Type: BlockText, Text: strings.Repeat("r", n*charsPerToken)}, {Type: BlockImage}}}}}
	return use, res
}

func TestTrimHistory(t *testing.T) {
	use, res := toolTurn(30)
	h := []Message{human(10), answer(10), human(10), use, res, answer(5), human(10)}
	// tokens: 10 10 | 10 1 (30+1600) 5 | 10
	if got := conversationTokens(h); got != 10+10+10+1+30+imageTokens+5+10 {
		t.Fatalf("tokens %d", got)
	}
	tests := []struct {
		budget   int
		wantFrom int // index of the first kept message
	}{
		{budget: 10_000, wantFrom: 0},
		{budget: conversationTokens(h) - 1, wantFrom: 2}, // drop the first human turn only
		{budget: 100, wantFrom: 6},                       // the tool turn is too big: keep the last human turn
		{budget: 1, wantFrom: 6},                         // the newest message is always kept
		{budget: conversationTokens(h[2:]), wantFrom: 2}, // exactly at the budget
	}
	for _, tc := range tests {
		got := trimHistory(h, tc.budget)
		if len(got) != len(h)-tc.wantFrom {
			t.Errorf("budget %d: kept %d messages, want from index %d", tc.budget, len(got), tc.wantFrom)
			continue
		}
		if !isHumanTurn(got[0]) && tc.wantFrom != 0 {
			t.Errorf("budget %d: cut before a non-human message", tc.budget)
		}
	}
	// A tool result is never the first message kept: the cut is only before a reader's message.
	for budget := 1; budget < conversationTokens(h); budget += 7 {
		if got := trimHistory(h, budget); got[0].Role != RoleUser || !isHumanTurn(got[0]) {
			t.Fatalf("budget %d: history starts with %+v", budget, got[0])
		}
	}
}

func TestReplyWarning(t *testing.T) {
	if replyWarning(false, false) != nil {
		t.Error("a warning without cause")
	}
	if w := replyWarning(true, false); w.Code != "cut_off" || w.Message != msgCutOff {
		t.Errorf("cut off: %v", w)
	}
	if w := replyWarning(false, true); w.Code != "long_conversation" || w.Message != msgLong {
		t.Errorf("long: %v", w)
	}
	if w := replyWarning(true, true); w.Code != "cut_off" || w.Message != msgCutOffLong || len(w.Codes) != 2 {
		t.Errorf("both: %v", w)
	}
}
