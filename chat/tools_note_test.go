package chat

import (
	"strings"
	"testing"

	"github.com/osc-assistant/assistant/config"
)

// TestServerToolNote: a tool bound to run on the server tells the model what that Python has;
// the same tool run by the reader's browser does not.
func TestServerToolNote(t *testing.T) {
	c := &config.Community{
		ID:         "nemar",
		Extensions: &config.Extensions{ClientTools: []config.ClientTool{{Name: "execute_code", Runtime: "python", Description: "Run Python."}}},
		Runtime:    &config.Runtime{Python: &config.PythonRuntime{ServerFallback: true}},
	}
	const note = "The server's Python has sqlite3; numpy needs the browser."
	server := bindTools(Turn{Community: c}, true, note)
	if len(server.list) != 1 || server.list[0].Description != "Run Python.\n\n"+note || !server.list[0].RunsOnServer {
		t.Errorf("server-bound: %+v", server.list)
	}
	browser := bindTools(Turn{Community: c, Declared: []string{"execute_code"}}, true, note)
	if len(browser.list) != 1 || strings.Contains(browser.list[0].Description, note) {
		t.Errorf("browser-bound: %+v", browser.list)
	}
}
