// Package chat owns the conversation with a model: the provider-neutral message model, the
// Provider interface and its implementations (Anthropic's Messages API, the OpenAI-compatible
// Chat Completions API, and a built-in offline scripted model), and the turn loop that streams
// a reply, binds client tools, parks a browser call, and resumes with its checked result.
//
// It does not speak HTTP to the widget (routers does) and does not keep state itself: sessions,
// parked calls and locks live behind the store package's interface.
package chat
