package rocketstore_test

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// mdLink matches an inline Markdown link or image target: [text](target)
// or [text](target "title").
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// TestDocLinks checks that every relative link in README.md, BENCHMARKS.md
// and docs/*.md names a file or directory of the repository and, when it
// has a #fragment into a Markdown file, a heading of that file. Links with
// a scheme (https:, mailto:) are not followed.
func TestDocLinks(t *testing.T) {
	docs, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	docs = append([]string{"README.md", "BENCHMARKS.md"}, docs...)
	anchors := map[string]map[string]bool{}
	for _, doc := range docs {
		links, err := relativeLinks(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range links {
			target, frag, _ := strings.Cut(l.target, "#")
			path := doc
			if target != "" {
				path = filepath.Join(filepath.Dir(doc), filepath.FromSlash(target))
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s:%d: link %q: %v", doc, l.line, l.target, err)
				continue
			}
			if frag == "" || !strings.HasSuffix(path, ".md") {
				continue
			}
			if anchors[path] == nil {
				if anchors[path], err = headingAnchors(path); err != nil {
					t.Fatal(err)
				}
			}
			if !anchors[path][frag] {
				t.Errorf("%s:%d: link %q: %s has no heading #%s", doc, l.line, l.target, path, frag)
			}
		}
	}
}

// link is a link target and the line it is on.
type link struct {
	target string
	line   int
}

// relativeLinks returns the links of a Markdown file outside fenced code
// blocks that have no URL scheme.
func relativeLinks(path string) ([]link, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var links []link
	fenced := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
			if target := m[1]; !strings.Contains(target, "://") && !strings.HasPrefix(target, "mailto:") {
				links = append(links, link{target, n})
			}
		}
	}
	return links, sc.Err()
}

// headingAnchors returns the fragments GitHub gives the headings of a
// Markdown file: lower case, punctuation dropped, spaces as hyphens, and
// -1, -2, ... appended to repeats.
func headingAnchors(path string) (map[string]bool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	anchors := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		slug := slugify(strings.TrimLeft(line, "#"))
		if k := seen[slug]; k > 0 {
			anchors[slug+"-"+strconv.Itoa(k)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	}
	return anchors, nil
}

// slugify is GitHub's heading-to-fragment rule.
func slugify(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
