// Package browsertest drives rocketstore's web console in a real browser
// (Debian's chromium, through chromedp) against an in-process server with
// real data. It is a nested module so that the library does not depend on
// chromedp. CI (.ci/run) installs chromium and runs it; set
// ROCKETSTORE_SCREENSHOTS=DIR to save screenshots of the main pages (those of
// docs/console.md are made this way into docs/).
package browsertest
