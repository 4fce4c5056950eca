package chat

import "unicode/utf8"

// History budget (api.md §8): what is sent to the model is trimmed to about 80,000 tokens,
// and a reply past 87.5 % of that carries a long-conversation warning.
const (
	maxConversationTokens  = 80_000
	longConversationTokens = 70_000
	imageTokens            = 1_600
	charsPerToken          = 4
)

// blockTokens estimates a block's tokens: about four characters each, 1,600 per image.
func blockTokens(b Block) int {
	if b.Type == BlockImage {
		return imageTokens
	}
	n := (utf8.RuneCountInString(b.Text) + len(b.Input) + charsPerToken - 1) / charsPerToken
	for _, c := range b.Content {
		n += blockTokens(c)
	}
	return n
}

func messageTokens(m Message) int {
	n := 0
	for _, b := range m.Content {
		n += blockTokens(b)
	}
	return n
}

// conversationTokens estimates the tokens of a whole history.
func conversationTokens(history []Message) int {
	n := 0
	for _, m := range history {
		n += messageTokens(m)
	}
	return n
}

// isHumanTurn reports whether m is a reader's message (not a tool result): the only place a
// history may be cut, so a tool call is never separated from its result.
func isHumanTurn(m Message) bool {
	if m.Role != RoleUser {
		return false
	}
	for _, b := range m.Content {
		if b.Type == BlockToolResult {
			return false
		}
	}
	return true
}

// trimHistory drops the oldest turns until the history fits budget tokens, cutting only
// before a reader's message. The newest reader's message and everything after it are always
// kept, even if they alone exceed the budget.
func trimHistory(history []Message, budget int) []Message {
	total := conversationTokens(history)
	if total <= budget {
		return history
	}
	dropped, last := 0, -1
	for i, m := range history {
		if isHumanTurn(m) {
			last = i
			if i > 0 && total-dropped <= budget {
				return history[i:]
			}
		}
		dropped += messageTokens(m)
	}
	if last > 0 {
		return history[last:]
	}
	return history
}

// replyWarning is the one warning event a reply may carry before done, or nil.
func replyWarning(cutOff, long bool) *WarningEvent {
	switch {
	case cutOff && long:
		return &WarningEvent{Message: msgCutOffLong, Code: "cut_off", Codes: []string{"cut_off", "long_conversation"}}
	case cutOff:
		return &WarningEvent{Message: msgCutOff, Code: "cut_off"}
	case long:
		return &WarningEvent{Message: msgLong, Code: "long_conversation"}
	}
	return nil
}
