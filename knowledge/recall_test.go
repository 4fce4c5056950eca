package knowledge

import (
	"testing"
)

// recallQuestions are questions a reader might ask, each with the section (document URL and
// anchor) that answers it, over the documents in testdata/docs.
var recallQuestions = []struct{ q, url string }{
	{"How do I write tags that belong together, like a red circle?", "https://docs.example.org/spec/index.html#tag-groups"},
	{"What does the # sign mean in a sidecar annotation?", "https://docs.example.org/spec/index.html#value-placeholders"},
	{"Where do I say which schema version my dataset uses?", "https://docs.example.org/spec/index.html#schema-versions"},
	{"How can I use tags from the sleep scoring library?", "https://docs.example.org/spec/index.html#library-schemas"},
	{"How do I define a reusable group of tags and refer to it?", "https://docs.example.org/spec/index.html#definitions"},
	{"How do I mark an event that lasts a while, with a start and an end?", "https://docs.example.org/spec/index.html#temporal-scope"},
	{"What does the error DEF_UNMATCHED mean?", "https://docs.example.org/spec/index.html#definitions"},
	{"Are tags case sensitive? What is the long form of a tag?", "https://docs.example.org/spec/index.html#annotation-strings"},
	{"How do I install the command line tools?", "https://docs.example.org/tutorial/#installing-the-tools"},
	{"How can I generate a sidecar template from my events file?", "https://docs.example.org/tutorial/#creating-a-sidecar"},
	{"How do I run the validator on my whole dataset in continuous integration?", "https://docs.example.org/tutorial/#validating-your-dataset"},
	{"I get UNITS_INVALID for a duration, how do I fix it?", "https://docs.example.org/tutorial/#fixing-common-errors"},
	{"How do I upload my dataset to the archive and get a DOI?", "https://docs.example.org/tutorial/#uploading-to-the-archive"},
	{"Where can I ask questions about EAF?", "https://docs.example.org/tutorial/#getting-help"},
	{"How should I cite EAF in a paper?", "https://www.example.org/faq.html#cite"},
	{"Does BIDS support EAF annotations for EEG?", "https://www.example.org/faq.html#bids"},
	{"Under which license is the schema released?", "https://www.example.org/faq.html#license"},
	{"Why does the validator say my tag is not recognized?", "https://www.example.org/faq.html#unknown-tag"},
	{"What is the default unit for frequency?", "https://www.example.org/faq.html#units"},
	{"Where do I report a bug in the Python validator?", "https://www.example.org/faq.html#bugs"},
	{"Which Python version does eaftools need, and how do I pip install it?", "https://docs.example.org/guide.md#installation"},
	{"How do I load schema version 8.3.0 in Python?", "https://docs.example.org/guide.md#loading-a-schema"},
	{"How can I check a single annotation string in my code?", "https://docs.example.org/guide.md#validating-strings-in-code"},
	{"How do I rename or remove columns of events files?", "https://docs.example.org/guide.md#remodeling-event-files"},
	{"How do I search for events tagged with both Red and Circle?", "https://docs.example.org/guide.md#searching-annotations"},
	{"Which environment variable sets the schema cache directory?", "https://docs.example.org/guide.md#configuration"},
	{"How often is the standard schema released?", "https://www.example.org/governance#release-process"},
	{"What changes are allowed in a minor release versus a major one?", "https://www.example.org/governance#versioning-policy"},
	{"How do I propose a new tag for the schema?", "https://www.example.org/governance#proposing-new-tags"},
	{"Who handles reports of unacceptable behaviour?", "https://www.example.org/governance#code-of-conduct"},
	{"How are steering committee members elected?", "https://www.example.org/governance#steering-committee"},
	{"Who funds the working group?", "https://www.example.org/governance#funding"},
}

// TestSearchRecall measures recall@3: the share of questions whose answering section is
// among the first three results. The issue asks for at least 0.8.
func TestSearchRecall(t *testing.T) {
	s := newSite(t)
	l := newLibrary(t, t.TempDir(), s.resolve())
	l.Apply([]Community{{ID: "eaf", Name: "EAF", Docs: eafDocs()}})
	ready(t, l, "eaf")
	hits := 0
	for _, q := range recallQuestions {
		secs, err := l.Search(t.Context(), "eaf", q.q, 3)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		var got []string
		for _, s := range secs {
			got = append(got, s.URL())
			found = found || s.URL() == q.url
		}
		if found {
			hits++
		} else {
			t.Logf("miss: %q\n  want %s\n  got  %v", q.q, q.url, got)
		}
	}
	recall := float64(hits) / float64(len(recallQuestions))
	t.Logf("recall@3 = %.3f (%d of %d questions)", recall, hits, len(recallQuestions))
	if len(recallQuestions) < 25 || recall < 0.8 {
		t.Errorf("recall@3 = %.3f over %d questions, want at least 0.8 over at least 25", recall, len(recallQuestions))
	}
}
